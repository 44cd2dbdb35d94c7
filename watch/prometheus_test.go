package watch

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/troupe-ai/troupe/messages"
)

// promRun is a run whose metrics are known: a root on node n1 that calls
// two tools (one an error, one cached), delegates an explore agent that
// waits for a slot, and finishes; a node joins with 4 slots.
func promRun(t *testing.T) []messages.Event {
	s := &stream{t: t}
	s.add("run", "", messages.EvtRunStarted, messages.RunStarted{Task: "t"})
	s.add("root", "root", messages.EvtAgentStarted, messages.AgentStarted{Task: "t"})
	s.add("root", "root", messages.EvtRoundStarted, messages.RoundStarted{Round: 1, Model: "m1"})
	s.add("root", "root", messages.EvtLLMResponse, messages.LLMResponse{Round: 1, Model: "m1", TokensIn: 100, TokensOut: 10, CostUSD: 0.5, DurationMS: 1500})
	s.call("root", "root", 1, "c1", "grep", `{}`, false, messages.ToolFinished{DurationMS: 20, IsError: true})
	s.call("root", "root", 1, "c2", "read_file", `{}`, false, messages.ToolFinished{DurationMS: 2, Cached: true})
	s.add("root", "root", messages.EvtAgentSpawned, messages.AgentSpawned{Child: "explore-1", Kind: "explore"})
	s.add("root", "root", messages.EvtBudgetWaiting, messages.BudgetWaiting{Agent: "explore-1", Kind: "explore", Reason: "slots"})
	s.add("explore-1", "explore", messages.EvtLLMResponse, messages.LLMResponse{Round: 1, Model: "m0", TokensIn: 40, TokensOut: 4, DurationMS: 300})
	return s.events
}

func TestPromMetricsFromEvents(t *testing.T) {
	depth := int64(3)
	stats := Stats{QueueDepth: &depth, Nodes: []NodeStats{{ID: "n1", Name: "builder", Slots: 4, Free: 3}}}
	m := NewPromMetrics(PromOptions{Stats: func() Stats { return stats }})
	evs := promRun(t)
	node := func(ev messages.Event) messages.Event { ev.Node = "n1"; return ev }
	for _, ev := range evs {
		if ev.Agent == "root" {
			ev = node(ev)
		}
		m.Apply(ev)
	}
	check := func(name string, got, want float64) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("root input tokens", testutil.ToFloat64(m.tokens.WithLabelValues("root", "m1", "input")), 100)
	check("explore output tokens", testutil.ToFloat64(m.tokens.WithLabelValues("explore", "m0", "output")), 4)
	check("root dollars", testutil.ToFloat64(m.cost.WithLabelValues("root", "m1")), 0.5)
	check("grep errors", testutil.ToFloat64(m.toolCalls.WithLabelValues("grep", "error")), 1)
	check("cached reads", testutil.ToFloat64(m.toolCalls.WithLabelValues("read_file", "cached")), 1)
	check("budget waits", testutil.ToFloat64(m.budgetWaits.WithLabelValues("explore", "slots")), 1)
	check("running roots", testutil.ToFloat64(m.agents.WithLabelValues("root", "running")), 1)
	check("waiting explores", testutil.ToFloat64(m.agents.WithLabelValues("explore", "waiting")), 1)

	// The root ends: it leaves the gauges and frees its slot.
	end, _ := messages.NewEvent("r1", "root", messages.EvtAgentFinished, 99, messages.AgentEnded{Status: "completed"})
	end.Kind, end.Node = "root", "n1"
	m.Apply(end)
	check("running roots after the end", testutil.ToFloat64(m.agents.WithLabelValues("root", "running")), 0)
	check("ended roots", testutil.ToFloat64(m.agentsEnded.WithLabelValues("root", "completed")), 1)

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`troupe_tokens_total{direction="input",kind="root",model="m1"} 100`,
		"troupe_queue_depth 3", "troupe_nodes 1", `troupe_node_slots{node="n1"} 4`, `troupe_node_free_slots{node="n1"} 3`,
		`troupe_model_call_duration_seconds_bucket{model="m1",le="2.5"} 1`,
		`troupe_tool_call_duration_seconds_count{tool="grep"} 1`, `troupe_events_total{type="llm.response"} 2`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// Label values from the wire are bounded: past maxLabelValues tools, the
// rest count as "other".
func TestPromMetricsBoundLabels(t *testing.T) {
	m := NewPromMetrics(PromOptions{})
	for i := range maxLabelValues + 50 {
		ev, err := messages.NewEvent("r1", "root", messages.EvtToolFinished, uint64(i+1), messages.ToolFinished{Tool: fmt.Sprintf("t%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		m.Apply(ev)
	}
	if got := testutil.CollectAndCount(m.toolCalls); got != maxLabelValues+1 {
		t.Errorf("%d tool call series, want %d", got, maxLabelValues+1)
	}
	if got := testutil.ToFloat64(m.toolCalls.WithLabelValues(otherLabel, "ok")); got != 50 {
		t.Errorf("other: %v, want 50", got)
	}
}
