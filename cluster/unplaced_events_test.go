package cluster

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/watch"
)

// A remote child that no node ever takes ends in the events: the run
// completes, and the child's agent.failed (emitted by the requester on
// its behalf, with the placement's reason) makes watch's tree show it
// failed and the metrics count it ended, not spawned forever.
func TestUntakenRemoteChildEndsFailedInEvents(t *testing.T) {
	s := natsServer(t)
	args, _ := json.Marshal(map[string]string{"type": "explore", "task": "where is main?"})
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: args}}}, {Text: "done without it"}}},
	}})
	defer srv.Close()
	run := "run-untaken"
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, connect(t, s)), Run: run, PlacementTimeout: time.Second,
		Placement: map[string]string{"explore": PlaceRemote}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	rec := &recorder{}
	res, err := actors.Run(t.Context(), actors.Options{Run: run, Workspace: workspace(t), Task: "find main",
		Client: modelClient(t, srv), Models: actors.Models{Default: "big", Cheap: "small"}, Events: rec,
		Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}},
		Placer:   remote.Placer(), OnBudget: remote.ServeBudget, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actors.StatusCompleted {
		t.Fatalf("run: %+v", res.AgentResult)
	}
	tree := watch.NewTree(100)
	prom := watch.NewPromMetrics(watch.PromOptions{})
	var child string
	ends := 0
	for _, ev := range rec.events() {
		tree.Apply(ev)
		prom.Apply(ev)
		if d, ok := mustDecode(t, ev).(*messages.AgentSpawned); ok {
			child = d.Child
		}
		if ev.Agent != actors.RootAgentID && strings.HasPrefix(ev.Type, "agent.") && ev.Type != messages.EvtAgentSpawned {
			ends++
			d, _ := mustDecode(t, ev).(*messages.AgentEnded)
			if ev.Type != messages.EvtAgentFailed || d == nil || !strings.Contains(d.Error, `no live node serves kind "explore"`) ||
				ev.Parent != actors.RootAgentID || ev.Kind != "explore" {
				t.Errorf("the child's end: %+v %+v", ev, d)
			}
		}
	}
	if child == "" || ends != 1 {
		t.Fatalf("child %q spawned, %d terminal events for it (want 1)", child, ends)
	}
	runs := tree.Runs()
	if len(runs) != 1 || runs[0].Agents[child] == nil {
		t.Fatalf("watch's tree: %+v", runs)
	}
	if a := runs[0].Agents[child]; a.Status != watch.StatusFailed || !strings.Contains(a.Error, "no live node serves") {
		t.Errorf("watch shows the child %q (%s)", a.Status, a.Error)
	}
	if got := metric(t, prom, "troupe_agents", "explore", "spawned"); got != 0 {
		t.Errorf("troupe_agents{kind=explore,status=spawned} = %v after the run, want 0", got)
	}
	if got := metric(t, prom, "troupe_agents_ended_total", "explore", "failed"); got != 1 {
		t.Errorf("troupe_agents_ended_total{kind=explore,status=failed} = %v, want 1", got)
	}
}

// metric reads the value of a kind/status series from the registry (0
// when the series does not exist).
func metric(t *testing.T, m *watch.PromMetrics, name, kind, status string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == kind && labels["status"] == status {
				if s.GetGauge() != nil {
					return s.GetGauge().GetValue()
				}
				return s.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func mustDecode(t *testing.T, ev messages.Event) any {
	t.Helper()
	v, err := ev.Decode()
	if err != nil {
		t.Fatalf("%s: %v", ev.Type, err)
	}
	return v
}
