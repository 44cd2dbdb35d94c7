package console

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/watch"
)

// EndWords says how a run ended and after how many of the root's rounds:
// "finished after 1 round", "cancelled after 2 rounds".
func EndWords(status, reason string, rounds int) string {
	return fmt.Sprintf("%s after %d %s", watch.EndWords(status, reason), rounds, watch.Plural(rounds, "round", "rounds"))
}

// LimitWords says which limit stopped a run, how to raise it and how to
// go on (resume, the resume command): "" when no limit did.
func LimitWords(reason string, maxRounds int, resume string) string {
	var what string
	switch reason {
	case actors.ReasonRoundLimit:
		what = fmt.Sprintf("stopped at the round limit of %d %s per agent (raise it with --max-rounds or agent.max_rounds)",
			maxRounds, watch.Plural(maxRounds, "round", "rounds"))
	case actors.ReasonBudgetExhausted:
		what = "stopped: the run's budget is spent (raise budget.tokens, budget.usd, budget.tool_calls or budget.wall_time in the config)"
	default:
		return ""
	}
	return fmt.Sprintf("%s; to go on: %s", what, resume)
}

// PrintRunSummary lists what a run spent: in all, per kind, and per agent
// with its sub-tree rolled up, as the budget actor accounted it.
// With unpriced models in the run, dollar amounts are not shown: they
// would be wrong.
func PrintRunSummary(w io.Writer, b *messages.BudgetSnapshot, unpriced ...string) {
	if b == nil || len(b.Agents) <= 1 {
		return
	}
	cost := func(usd float64) string {
		if len(unpriced) > 0 {
			return "cost unknown"
		}
		return fmt.Sprintf("$%.4f", usd)
	}
	fmt.Fprintf(w, "whole run: %d agents · %d tokens · %s · %d tool calls\n", len(b.Agents), b.Used.Tokens, cost(b.Used.CostUSD), b.Used.ToolCalls)
	if len(unpriced) > 0 {
		fmt.Fprintf(w, "  (no price for %s: add it under model.pricing to see costs)\n", strings.Join(unpriced, ", "))
	}
	kinds := make([]string, 0, len(b.ByKind))
	for k := range b.ByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		kt := b.ByKind[k]
		fmt.Fprintf(w, "  %-10s %3d %-6s · %8d tokens · %s\n", k, kt.Agents, agents(kt.Agents), kt.Used.Tokens, cost(kt.Used.CostUSD))
	}
	depth := map[string]int{}
	for _, a := range b.Agents { // parents are listed before their children
		if a.Parent != "" {
			depth[a.Agent] = depth[a.Parent] + 1
		}
	}
	for _, a := range b.Agents {
		line := fmt.Sprintf("  %*s%-18s %8d tokens · %s", 2*depth[a.Agent], "", a.Agent, a.Used.Tokens, cost(a.Used.CostUSD))
		if a.Descendants > 0 {
			line += fmt.Sprintf(" · with its %d %s: %d tokens · %s", a.Descendants, agents(a.Descendants), a.Subtree.Tokens, cost(a.Subtree.CostUSD))
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
