package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

func TestRunSummaryRollsUpAndCountsAgents(t *testing.T) {
	snap := &messages.BudgetSnapshot{
		Used: messages.BudgetUsage{Tokens: 300, CostUSD: 0.003, ToolCalls: 4},
		ByKind: map[string]messages.BudgetKindTotals{
			"root":    {Agents: 1, Used: messages.BudgetUsage{Tokens: 100, CostUSD: 0.001}},
			"explore": {Agents: 2, Used: messages.BudgetUsage{Tokens: 200, CostUSD: 0.002}},
		},
		Agents: []messages.BudgetAgent{
			{Agent: "root", Kind: "root", Used: messages.BudgetUsage{Tokens: 100, CostUSD: 0.001},
				Subtree: messages.BudgetUsage{Tokens: 300, CostUSD: 0.003}, Descendants: 2},
			{Agent: "lead", Kind: "explore", Parent: "root", Used: messages.BudgetUsage{Tokens: 120, CostUSD: 0.0012},
				Subtree: messages.BudgetUsage{Tokens: 200, CostUSD: 0.002}, Descendants: 1},
			{Agent: "leaf", Kind: "explore", Parent: "lead", Used: messages.BudgetUsage{Tokens: 80, CostUSD: 0.0008}},
		},
	}
	var b strings.Builder
	printRunSummary(&b, snap)
	got := b.String()
	for _, want := range []string{
		"whole run: 3 agents · 300 tokens · $0.0030 · 4 tool calls\n",
		"  explore      2 agents ·      200 tokens · $0.0020\n",
		"  root         1 agent  ·      100 tokens · $0.0010\n",
		"with its 2 agents: 300 tokens · $0.0030\n",
		"\n    lead ", // one level under root
		"with its 1 agent: 200 tokens · $0.0020\n",
		"\n      leaf ", // two levels under root
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}

	b.Reset()
	printRunSummary(&b, &messages.BudgetSnapshot{Agents: snap.Agents[:1]})
	// Unpriced models: no dollar amounts, a hint instead.
	var u bytes.Buffer
	printRunSummary(&u, snap, "local-llama")
	if strings.Contains(u.String(), "$") || !strings.Contains(u.String(), "no price for local-llama") || !strings.Contains(u.String(), "cost unknown") {
		t.Errorf("unpriced summary:\n%s", u.String())
	}
	if b.Len() != 0 {
		t.Errorf("a lone root printed a summary:\n%s", b.String())
	}
}
