package mcpserver

import (
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// start_run's budget_tokens never raises the configured budget: above it
// the run gets the configured one (the budget actor's own limit says so)
// and the answer notes it; below it the run gets what it asked.
func TestBudgetClamped(t *testing.T) {
	srv := llmtest.New(exploreScript(0, 0))
	t.Cleanup(srv.Close)
	cs := connect(t, newServer(t, srv, workspace(t, "budget:\n  tokens: 50000\n")), nil)
	st := call(t, t.Context(), cs, "start_run", map[string]any{"task": "find alpha", "budget_tokens": 1_000_000_000_000, "wait": true})
	if st.Status != "completed" || st.BudgetTokens != 50000 || !strings.Contains(st.Note, "the run got 50000") {
		t.Errorf("a budget above the configured one: %+v, want the run held to 50000 and a note", st)
	}
	st = call(t, t.Context(), cs, "start_run", map[string]any{"task": "find alpha", "budget_tokens": 20000, "wait": true})
	if st.Status != "completed" || st.BudgetTokens != 20000 || st.Note != "" {
		t.Errorf("a budget below the configured one: %+v, want 20000", st)
	}
	st = call(t, t.Context(), cs, "start_run", map[string]any{"task": "find alpha", "wait": true})
	if st.BudgetTokens != 50000 {
		t.Errorf("no budget_tokens: %+v, want the configured 50000", st)
	}
}

// At most mcp.max_runs runs go at once: the next start is refused with a
// sentence naming the setting, and succeeds once one ended; only the
// mcp.keep_runs most recent finished runs are remembered.
func TestRunsCappedAndPruned(t *testing.T) {
	srv := llmtest.New(exploreScript(time.Hour, 0))
	t.Cleanup(srv.Close)
	s := newServer(t, srv, workspace(t, "mcp:\n  max_runs: 2\n  keep_runs: 2\n"))
	cs := connect(t, s, nil)
	a := call(t, t.Context(), cs, "start_run", map[string]any{"task": "find alpha"})
	b := call(t, t.Context(), cs, "explore", map[string]any{"question": "where is alpha?"})
	msg := errorText(t, cs, "start_run", map[string]any{"task": "one too many"})
	if !strings.Contains(msg, "2 runs are running") || !strings.Contains(msg, "mcp.max_runs") {
		t.Errorf("a third run: %q, want a refusal naming mcp.max_runs", msg)
	}
	if msg := errorText(t, cs, "explore", map[string]any{"question": "and another?"}); !strings.Contains(msg, "mcp.max_runs") {
		t.Errorf("a third explore: %q", msg)
	}
	ids := []string{a.Run, b.Run}
	for range 3 { // each cancel frees a slot for the next run
		st := call(t, t.Context(), cs, "cancel_run", map[string]any{"run": ids[len(ids)-2]})
		if st.Status != "cancelled" {
			t.Fatalf("cancel_run: %+v", st)
		}
		ids = append(ids, call(t, t.Context(), cs, "start_run", map[string]any{"task": "find alpha"}).Run)
	}
	// Five runs started, three finished (cancelled): the first finished
	// one is forgotten, the last two are remembered.
	if msg := errorText(t, cs, "check_run", map[string]any{"run": ids[0]}); !strings.Contains(msg, "mcp.keep_runs") {
		t.Errorf("the oldest finished run: %q, want forgotten (mcp.keep_runs)", msg)
	}
	for _, id := range ids[1:] {
		if st := call(t, t.Context(), cs, "check_run", map[string]any{"run": id}); st.Run != id {
			t.Errorf("run %s: %+v", id, st)
		}
	}
	if remembered, running := s.runs.size(); remembered != 4 || running != 2 {
		t.Errorf("the server remembers %d runs (%d running), want 2 finished + 2 running", remembered, running)
	}
}
