package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/app/console"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// publishEvents stores evs in the events stream of the server c is
// connected to, in order.
func publishEvents(t *testing.T, c *bus.Conn, evs ...messages.Event) {
	t.Helper()
	if err := c.EnsureStreams(t.Context(), bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	pub, err := c.NewPublisher(bus.PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		pub.Emit(ev)
	}
	if err := pub.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func event(t *testing.T, run, agent, typ string, seq uint64, at time.Time, data any) messages.Event {
	t.Helper()
	ev, err := messages.NewEvent(run, agent, typ, seq, data)
	if err != nil {
		t.Fatal(err)
	}
	ev.Time = at
	return ev
}

// watch --json prints a run found lost (its lease lapsed, no run.finished)
// as a run.lost line on stdout, as docs/events.md describes it, with the
// command that resumes it: its workspace, the server watch used and its
// remote kinds (the credentials: TestResumeLineTakesTheRequesterCreds
// and the end-to-end TestOrchestratorKilledRunIsLostAndResumed).
func TestWatchJSONReportsALostRun(t *testing.T) {
	e, c := embeddedServer(t)
	ws := filepath.Join(t.TempDir(), "my repo")
	an := time.Now().Add(-time.Hour).UTC()
	publishEvents(t, c,
		event(t, "lost-run", "run", messages.EvtRunStarted, 1, an, messages.RunStarted{Task: "t", Workspace: ws, LeaseMS: 10_000}),
		event(t, "lost-run", "root", messages.EvtAgentSpawned, 1, an, messages.AgentSpawned{Child: "explore-1", Kind: "explore", Placement: "remote"}))
	code, out, errs := watchCmd(t, "--nats", e.URL(), "--run", "lost-run", "--from-start", "--json")
	if code != exitOK {
		t.Fatalf("watch exited %d:\n%s\n%s", code, errs, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	dec := json.NewDecoder(strings.NewReader(lines[len(lines)-1]))
	dec.DisallowUnknownFields()
	var lost console.LostRun
	if err := dec.Decode(&lost); err != nil {
		t.Fatalf("the last line is not a run.lost record: %v\n%s", err, out)
	}
	want := "orchestrator resume lost-run --workspace '" + ws + "' --nats " + e.URL() + " --placement explore=remote"
	if lost.Type != console.TypeRunLost || lost.Source != "watch" || lost.Run != "lost-run" || lost.Data.LeaseMS != 10_000 ||
		!lost.Data.LastEvent.Equal(an) || lost.Data.Workspace != ws || lost.Data.Resume != want {
		t.Errorf("run.lost line %+v\nwant resume %q", lost, want)
	}
	if !strings.Contains(errs, "lost-run lost: ") || !strings.Contains(errs, "resume it with "+want) {
		t.Errorf("stderr does not say the run is lost with its resume line:\n%s", errs)
	}
	checkDocumented(t, "docs/events.md", lost)
}

// checkDocumented fails unless doc names every JSON field of v's type
// (and of its data) in backquotes.
func checkDocumented(t *testing.T, doc string, v console.LostRun) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", doc))
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	raw, _ := json.Marshal(v)
	_ = json.Unmarshal(raw, &fields)
	var data map[string]json.RawMessage
	_ = json.Unmarshal(fields["data"], &data)
	for _, m := range []map[string]json.RawMessage{fields, data} {
		for k := range m {
			if !strings.Contains(string(b), "`"+k+"`") {
				t.Errorf("%s does not document the run.lost field %q", doc, k)
			}
		}
	}
	if !strings.Contains(string(b), "`"+console.TypeRunLost+"`") {
		t.Errorf("%s does not name %s", doc, console.TypeRunLost)
	}
}

// watch --run on a run that has finished, without --from-start, shows it
// from its start and ends, instead of waiting for events that never
// come; a run resumed after it finished is followed live again.
func TestWatchFinishedRunWithoutFromStart(t *testing.T) {
	e, c := embeddedServer(t)
	an := time.Now().Add(-time.Hour).UTC()
	publishEvents(t, c,
		event(t, "done-run", "run", messages.EvtRunStarted, 1, an, messages.RunStarted{Task: "t", Workspace: "/w"}),
		event(t, "done-run", "root", messages.EvtAgentStarted, 1, an, messages.AgentStarted{Task: "t"}),
		event(t, "done-run", "root", messages.EvtAgentFinished, 2, an, messages.AgentEnded{Status: "completed"}),
		event(t, "done-run", "run", messages.EvtRunFinished, 2, an, messages.RunFinished{Status: "completed"}))
	code, out, errs := watchCmd(t, "--nats", e.URL(), "--run", "done-run", "--json")
	if code != exitOK || !strings.Contains(errs, "run done-run has finished: showing it from its start") {
		t.Fatalf("watch exited %d:\n%s", code, errs)
	}
	if n := strings.Count(out, `"run":"done-run"`); n != 4 || !strings.Contains(out, messages.EvtRunFinished) {
		t.Errorf("watch showed %d events of the finished run:\n%s", n, out)
	}
	// Resumed: its latest run.started comes after its run.finished.
	publishEvents(t, c, event(t, "done-run", "run", messages.EvtRunStarted, 3, an, messages.RunStarted{Task: "t", Workspace: "/w", Resumed: true}))
	if ended, err := c.RunEnded(t.Context(), "done-run"); err != nil || ended {
		t.Errorf("a resumed run ended: %v %v", ended, err)
	}
	if ended, err := c.RunEnded(t.Context(), "no-such-run"); err != nil || ended {
		t.Errorf("an unknown run ended: %v %v", ended, err)
	}
}

// watch --run on a lost run (its lease lapsed, no run.finished) without
// --from-start shows it from its start and ends with it lost, instead of
// waiting for events that never come. The run's lease and latest event
// come from the events stream (RunOpen).
func TestWatchLostRunWithoutFromStart(t *testing.T) {
	e, c := embeddedServer(t)
	an := time.Now().Add(-time.Hour).UTC()
	publishEvents(t, c,
		event(t, "lost-run", "run", messages.EvtRunStarted, 1, an, messages.RunStarted{Task: "t", Workspace: "/w", LeaseMS: 10_000}),
		event(t, "lost-run", "root", messages.EvtAgentStarted, 1, an, messages.AgentStarted{Task: "t"}))
	code, out, errs := watchCmd(t, "--nats", e.URL(), "--run", "lost-run", "--json")
	if code != exitOK || !strings.Contains(errs, "run lost-run is lost (its lease lapsed before it finished): showing it from its start") ||
		!strings.Contains(errs, "lost-run lost: ") {
		t.Fatalf("watch exited %d:\n%s", code, errs)
	}
	if n := strings.Count(out, `"run":"lost-run"`); n != 3 || !strings.Contains(out, `"type":"`+console.TypeRunLost+`"`) {
		t.Errorf("watch showed %d lines of the lost run:\n%s", n, out)
	}
	now := time.Now().UTC()
	publishEvents(t, c, event(t, "lost-run", "root", messages.EvtAgentFinished, 2, now, messages.AgentEnded{Status: "completed"}))
	open, ok, err := c.RunOpen(t.Context(), "lost-run")
	if err != nil || !ok || open.Lease != 10*time.Second || !open.Last.Equal(now) {
		t.Errorf("the open run: %+v %v %v", open, ok, err)
	}
	if _, ok, err := c.RunOpen(t.Context(), "no-such-run"); err != nil || ok {
		t.Errorf("an unknown run is open: %v %v", ok, err)
	}
}
