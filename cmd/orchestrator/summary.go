package main

import (
	"fmt"
	"io"
	"sort"

	"github.com/troupe-ai/troupe/messages"
)

// printRunSummary lists what a run spent: in all, per kind, and per agent
// with its sub-tree rolled up, as the budget actor accounted it.
func printRunSummary(w io.Writer, b *messages.BudgetSnapshot) {
	if b == nil || len(b.Agents) <= 1 {
		return
	}
	fmt.Fprintf(w, "whole run: %d agents · %d tokens · $%.4f · %d tool calls\n", len(b.Agents), b.Used.Tokens, b.Used.CostUSD, b.Used.ToolCalls)
	kinds := make([]string, 0, len(b.ByKind))
	for k := range b.ByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		kt := b.ByKind[k]
		fmt.Fprintf(w, "  %-10s %3d %-6s · %8d tokens · $%.4f\n", k, kt.Agents, agents(kt.Agents), kt.Used.Tokens, kt.Used.CostUSD)
	}
	depth := map[string]int{}
	for _, a := range b.Agents { // parents are listed before their children
		if a.Parent != "" {
			depth[a.Agent] = depth[a.Parent] + 1
		}
	}
	for _, a := range b.Agents {
		line := fmt.Sprintf("  %*s%-18s %8d tokens · $%.4f", 2*depth[a.Agent], "", a.Agent, a.Used.Tokens, a.Used.CostUSD)
		if a.Descendants > 0 {
			line += fmt.Sprintf(" · with its %d %s: %d tokens · $%.4f", a.Descendants, agents(a.Descendants), a.Subtree.Tokens, a.Subtree.CostUSD)
		}
		fmt.Fprintln(w, line)
	}
}

// agents is the noun for n agents.
func agents(n int) string {
	if n == 1 {
		return "agent"
	}
	return "agents"
}
