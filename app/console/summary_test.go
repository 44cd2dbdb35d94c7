package console

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
	PrintRunSummary(&b, snap)
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
	PrintRunSummary(&b, &messages.BudgetSnapshot{Agents: snap.Agents[:1]})
	// Unpriced models: no dollar amounts, a hint instead.
	var u bytes.Buffer
	PrintRunSummary(&u, snap, "local-llama")
	if strings.Contains(u.String(), "$") || !strings.Contains(u.String(), "no price for local-llama") || !strings.Contains(u.String(), "cost unknown") {
		t.Errorf("unpriced summary:\n%s", u.String())
	}
	if b.Len() != 0 {
		t.Errorf("a lone root printed a summary:\n%s", b.String())
	}
}

// The limit that stopped a run is said in words, with how to raise it and
// how to go on; never as the reason's token.
func TestLimitWords(t *testing.T) {
	for reason, want := range map[string]string{
		"round_limit": "stopped at the round limit of 1 round per agent (raise it with --max-rounds or agent.max_rounds); " +
			"to go on: orchestrator resume r1 --workspace /w",
		"budget_exhausted": "stopped: the run's budget is spent (raise budget.tokens, budget.usd, budget.tool_calls or budget.wall_time in the config); " +
			"to go on: orchestrator resume r1 --workspace /w",
		"finished": "",
	} {
		if got := LimitWords(reason, 1, "orchestrator resume r1 --workspace /w"); got != want {
			t.Errorf("%s:\ngot  %q\nwant %q", reason, got, want)
		}
	}
	if got := LimitWords("round_limit", 50, "orchestrator resume r1 --workspace /w"); !strings.Contains(got, "of 50 rounds per agent") {
		t.Errorf("50: %q", got)
	}
	for _, tc := range []struct {
		status, reason string
		rounds         int
		want           string
	}{
		{"completed", "finished", 1, "finished after 1 round"},
		{"cancelled", "cancelled", 2, "cancelled after 2 rounds"},
		{"completed", "budget_exhausted", 3, "ran out of budget after 3 rounds"},
	} {
		if got := EndWords(tc.status, tc.reason, tc.rounds); got != tc.want {
			t.Errorf("%+v: %q", tc, got)
		}
	}
}
