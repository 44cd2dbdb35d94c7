package bus

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// A scripted run with parallel explore agents publishes through the
// Publisher: a subscriber in another goroutine gets every event, each
// agent's without seq gaps, and exactly the set the in-process recorder saw.
func TestRunEventsOnTheBus(t *testing.T) {
	_, c := embedded(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	es, err := c.Events(ctx, WatchOptions{Run: "bus-run"})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := c.NewPublisher(PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var calls []llmtest.ToolCall
	for _, q := range []string{"a", "b", "c", "d"} {
		calls = append(calls, llmtest.ToolCall{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"` + q + `"}`)})
	}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{{ToolCalls: calls}, {Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "think", Args: json.RawMessage(`{"thought":"x"}`)}}}, {Text: "x.go:1"}}},
	}})
	defer srv.Close()
	client, _ := llm.NewClient(llm.Config{BaseURL: srv.URL(), Model: "m", Stream: true}, zerolog.Nop())
	rec := &actors.Recorder{}
	res, err := actors.Run(t.Context(), actors.Options{Run: "bus-run", Workspace: t.TempDir(), Task: "t", Client: client,
		Models: actors.Models{Default: "m"}, Events: actors.Emitters{rec, pub}, Log: zerolog.Nop(),
		Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}}})
	if err != nil || res.Status != actors.StatusCompleted {
		t.Fatalf("run %+v %v", res, err)
	}
	if err := pub.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := rec.Events()
	var got []messages.Event
	for len(got) < len(want) {
		select {
		case d := <-es.C:
			got = append(got, d.Event)
		case <-time.After(30 * time.Second):
			t.Fatalf("the subscriber got %d of %d events", len(got), len(want))
		}
	}
	ids := func(evs []messages.Event) []string {
		var out []string
		for _, e := range evs {
			out = append(out, e.ID)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(ids(got), ids(want)) {
		t.Error("the subscriber's events differ from the recorder's")
	}
	next := map[string]uint64{}
	for _, ev := range got {
		if ev.Seq != next[ev.Agent]+1 {
			t.Fatalf("%s: seq %d after %d", ev.Agent, ev.Seq, next[ev.Agent])
		}
		next[ev.Agent] = ev.Seq
	}
	if len(next) != 6 || pub.Dropped() != 0 { // run, root, four explore agents
		t.Errorf("%d agents' events, %d dropped", len(next), pub.Dropped())
	}
}
