package cluster

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/messages"
)

// placement auto: with no live node of the kind the child runs here; with
// a node that has a free slot it runs there.
func TestAutoPlacement(t *testing.T) {
	s := natsServer(t)
	srv := fanoutScript(1, false)
	defer srv.Close()
	nc := connect(t, s)
	placements := func(run string) []string {
		srv := fanoutScript(1, false) // a fresh script: the root's turns start over
		defer srv.Close()
		remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: run,
			Placement: map[string]string{"explore": PlaceAuto}, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		defer remote.Close()
		rec := &recorder{}
		res, err := actors.Run(t.Context(), actors.Options{Run: run, Workspace: workspace(t), Task: "t", Client: modelClient(t, srv),
			Models: actors.Models{Default: "big"}, Placer: remote.Placer(), OnBudget: remote.ServeBudget, Events: rec,
			Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}}, Log: zerolog.Nop()})
		if err != nil || res.Status != actors.StatusCompleted {
			t.Fatalf("run %+v %v", res, err)
		}
		var out []string
		for _, ev := range rec.events() {
			if d, err := messages.DecodeAs[messages.AgentSpawned](ev); err == nil && ev.Type == messages.EvtAgentSpawned {
				out = append(out, d.Placement)
			}
		}
		return out
	}
	if got := placements("auto-1"); len(got) != 1 || got[0] != "local" {
		t.Errorf("no node: placements %v, want [local]", got)
	}
	n := startNode(t, s, srv, "n1", 2, &recorder{})
	defer n.Drain(t.Context())
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := placements("auto-" + time.Now().Format("150405.000000000")[7:])
		if len(got) == 1 && got[0] == "remote" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a free node: placements %v, want [remote]", got)
		}
	}
}
