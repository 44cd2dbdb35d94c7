package watch

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/troupe-ai/troupe/messages"
)

// runOf is a run's events: a root that delegates an explore agent; both
// make a model call and a tool call; the explore agent ends, and the run
// finishes when finish is set (the root then still running).
func runOf(t testing.TB, run string, finish bool) []messages.Event {
	var evs []messages.Event
	seq := map[string]uint64{}
	add := func(agent, kind, typ string, data any) {
		seq[agent]++
		ev, err := messages.NewEvent(run, agent, typ, seq[agent], data)
		if err != nil {
			t.Fatal(err)
		}
		ev.Kind = kind
		evs = append(evs, ev)
	}
	explore := "explore-" + run
	add("run", "run", messages.EvtRunStarted, messages.RunStarted{Task: "t"})
	add("root", "root", messages.EvtAgentStarted, messages.AgentStarted{Task: "t"})
	add("root", "root", messages.EvtLLMResponse, messages.LLMResponse{Model: "m1", TokensIn: 10, TokensOut: 1, CostUSD: 0.01, CostKnown: true})
	add("root", "root", messages.EvtAgentSpawned, messages.AgentSpawned{Child: explore, Kind: "explore"})
	add(explore, "explore", messages.EvtAgentStarted, messages.AgentStarted{Task: "look"})
	add(explore, "explore", messages.EvtLLMResponse, messages.LLMResponse{Model: "m0", TokensIn: 5, TokensOut: 1})
	add(explore, "explore", messages.EvtToolFinished, messages.ToolFinished{Tool: "grep"})
	add(explore, "explore", messages.EvtAgentFinished, messages.AgentEnded{Status: "completed"})
	if finish {
		add("run", "run", messages.EvtRunFinished, messages.RunFinished{Status: "completed"})
	}
	return evs
}

// No label value is a run or an agent ID, however many runs there are:
// 300 runs (more than the 200 values a label may take) leave as many
// series as one, and every run counts (none falls into "other").
func TestPromMetricsNoRunOrAgentLabels(t *testing.T) {
	one, many := NewPromMetrics(PromOptions{}), NewPromMetrics(PromOptions{})
	ids := map[string]bool{}
	for i := range 300 {
		run := fmt.Sprintf("run-%03d", i)
		for _, ev := range runOf(t, run, true) {
			ids[ev.Run] = true
			if ev.Agent != "root" && ev.Agent != "run" { // fixed names, a kind's too
				ids[ev.Agent] = true
			}
			many.Apply(ev)
			if i == 0 {
				one.Apply(ev)
			}
		}
	}
	if a, b := series(t, one), series(t, many); len(a) != len(b) {
		t.Errorf("one run makes %d series, 300 runs %d", len(a), len(b))
	}
	for _, s := range series(t, many) {
		for _, id := range labelValues(s) {
			if ids[id] {
				t.Errorf("series %s has the run or agent ID %q as a label value", s, id)
			}
		}
	}
	if got := testutil.ToFloat64(many.tokens.WithLabelValues("explore", "m0", "input")); got != 300*5 {
		t.Errorf("explore input tokens %v, want %d: every run counts", got, 300*5)
	}
}

// series lists the series of m's scrape, one line each, without values.
func series(t *testing.T, m *PromMetrics) []string {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			var l []string
			for _, p := range mt.GetLabel() {
				l = append(l, p.GetName()+"="+p.GetValue())
			}
			out = append(out, f.GetName()+"{"+strings.Join(l, ",")+"}")
		}
	}
	return out
}

// labelValues are the values of a series line of series.
func labelValues(s string) []string {
	_, inner, _ := strings.Cut(strings.TrimSuffix(s, "}"), "{")
	var out []string
	for _, kv := range strings.Split(inner, ",") {
		if _, v, ok := strings.Cut(kv, "="); ok {
			out = append(out, v)
		}
	}
	return out
}

// A finished run's agents leave troupe_agents, even those whose end never
// came, and an event of the run that arrives later (a node's) brings none
// back.
func TestPromMetricsFinishedRunLeavesGauges(t *testing.T) {
	m := NewPromMetrics(PromOptions{})
	evs := runOf(t, "r1", true)
	for _, ev := range evs[:len(evs)-1] {
		m.Apply(ev)
	}
	if got := testutil.ToFloat64(m.agents.WithLabelValues("root", StatusRunning)); got != 1 {
		t.Fatalf("running roots before the end: %v", got)
	}
	m.Apply(evs[len(evs)-1])
	late, _ := messages.NewEvent("r1", "explore-late", messages.EvtAgentStarted, 1, messages.AgentStarted{})
	late.Kind = "explore"
	m.Apply(late)
	for _, kind := range []string{"root", "explore"} {
		if got := testutil.ToFloat64(m.agents.WithLabelValues(kind, StatusRunning)); got != 0 {
			t.Errorf("running %s agents after run.finished: %v", kind, got)
		}
	}
	if len(m.live.runs) != 0 {
		t.Errorf("%d runs kept after their end", len(m.live.runs))
	}
}

// Runs that never finish (their orchestrator died) are kept up to
// maxLiveRuns; past it the least recent goes, gauges included.
func TestPromMetricsLiveRunsBounded(t *testing.T) {
	m := NewPromMetrics(PromOptions{})
	for i := range maxLiveRuns + 50 {
		for _, ev := range runOf(t, fmt.Sprintf("run-%04d", i), false) {
			m.Apply(ev)
		}
	}
	if len(m.live.runs) != maxLiveRuns {
		t.Errorf("%d live runs kept, want %d", len(m.live.runs), maxLiveRuns)
	}
	if got := testutil.ToFloat64(m.agents.WithLabelValues("root", StatusRunning)); got != maxLiveRuns {
		t.Errorf("running roots %v, want %d", got, maxLiveRuns)
	}
	if _, ok := m.live.runs["run-0000"]; ok {
		t.Error("the least recent run is still kept")
	}
}

// Figures the monitor could not read are left out of the scrape, never
// shown as 0; past maxLabelValues nodes the rest are summed as "other".
func TestPromStatsLeftOutWhenUnknown(t *testing.T) {
	var stats Stats
	m := NewPromMetrics(PromOptions{Stats: func() Stats { return stats }})
	for _, s := range series(t, m) {
		if strings.HasPrefix(s, "troupe_queue_depth") || strings.HasPrefix(s, "troupe_node") {
			t.Errorf("unknown figures scraped: %s", s)
		}
	}
	for i := range maxLabelValues + 5 {
		stats.Nodes = append(stats.Nodes, NodeStats{ID: fmt.Sprintf("n%03d", i), Slots: 2, Free: 1})
	}
	body := scrape(t, m)
	for _, want := range []string{fmt.Sprintf("troupe_nodes %d\n", maxLabelValues+5), `troupe_node_slots{node="other"} 10`,
		`troupe_node_free_slots{node="other"} 5`, `troupe_node_free_slots{node="n000"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	if strings.Contains(body, "troupe_queue_depth") {
		t.Error("an unknown queue depth was scraped")
	}
}

// scrape is m's /metrics as a scraper gets it.
func scrape(t *testing.T, m *PromMetrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}
