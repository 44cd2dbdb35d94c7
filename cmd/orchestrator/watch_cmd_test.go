package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/ptytest"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// watchCmd runs watch with args, stopping it after a minute should it
// wait instead of ending (an interrupt, exit 130).
func watchCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	errb := &syncBuf{} // the connection's close is logged from its own goroutine
	code, err := cmdWatch(ctx, args, func(string) string { return "" }, strings.NewReader(""), &out, errb)
	if err != nil {
		_, _ = errb.Write([]byte(err.Error()))
	}
	return code, out.String(), errb.String()
}

// `watch --run` takes the 8-character short ID of a run and replays that
// run; an unknown run or a prefix two runs share is an error at once.
func TestWatchRunByShortID(t *testing.T) {
	e, c := embeddedServer(t)
	srv := scripted(t, llmtest.Turn{Text: "done"})
	code, out, errs := runCmd(t, t.Context(), testEnv(srv, t.TempDir()), false, "--workspace", t.TempDir(), "--model", "m1",
		"--nats", e.URL(), "--quiet", "--json", "say done")
	if code != exitOK {
		t.Fatalf("run exited %d: %s", code, errs)
	}
	var res struct{ Run string }
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Run) < 8 {
		t.Fatalf("run's JSON %q: %v", out, err)
	}

	code, out, errs = watchCmd(t, "--nats", e.URL(), "--run", res.Run[:8], "--from-start", "--json")
	if code != exitOK || !strings.Contains(errs, "watching run "+res.Run+" ") {
		t.Fatalf("watch --run %s exited %d:\n%s", res.Run[:8], code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		var ev messages.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Run != res.Run {
			t.Fatalf("watch printed %q (%v), not an event of %s", l, err, res.Run)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, messages.EvtRunFinished) {
		t.Errorf("the replay does not end with run.finished: %s", last)
	}

	for _, run := range []string{"0dd00000-0001", "0dd00000-0002"} {
		if _, err := c.JetStream().Publish(t.Context(), bus.EventSubject(bus.DefaultPrefix, run, "run", messages.EvtRunStarted), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	for arg, want := range map[string]string{"ffffffff": "no such run", "0dd00000": "matches several runs (2: 0dd00000-0001, 0dd00000-0002)"} {
		code, out, errs := watchCmd(t, "--nats", e.URL(), "--run", arg, "--from-start", "--json")
		if code != exitUsage || out != "" || !strings.Contains(errs, want) {
			t.Errorf("watch --run %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", arg, code, out, errs, want)
		}
	}
}

// On a terminal, watch counts the messages it refuses on the events'
// subjects (malformed, or not the event their subject names: a node's
// attempt at another agent's events) in the view, instead of a warning
// line per message over the tree.
func TestWatchShowsRefusedAsACount(t *testing.T) {
	e, c := embeddedServer(t)
	if err := c.EnsureStreams(t.Context(), bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	run := "0dd00000-0003"
	good, _ := json.Marshal(messages.Event{V: messages.EventVersion, Seq: 1, Time: time.Now().UTC(), Run: run, Agent: "root",
		Type: messages.EvtAgentStarted, Data: json.RawMessage(`{"kind":"root","model":"m","task":"t","depth":0}`)})
	for subj, data := range map[string][]byte{
		bus.EventSubject(bus.DefaultPrefix, run, "x", messages.EvtAgentStarted):     []byte("{not json"),
		bus.EventSubject(bus.DefaultPrefix, run, "other", messages.EvtAgentStarted): good, // the envelope names another agent
		bus.EventSubject(bus.DefaultPrefix, run, "root", messages.EvtRunFinished):   good, // an agent.started as run.finished
	} {
		if _, err := c.JetStream().Publish(t.Context(), subj, data); err != nil {
			t.Fatal(err)
		}
	}
	p, err := ptytest.Open(120, 30)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	errb := &syncBuf{}
	done := make(chan int, 1)
	go func() {
		code, _ := cmdWatch(ctx, []string{"--nats", e.URL(), "--from-start", "--follow"}, func(string) string { return "" },
			strings.NewReader(""), p.TTY, errb)
		done <- code
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.Output(), "refused: 3 message(s)") {
		if time.Now().After(deadline) {
			t.Fatalf("the view does not count the refused messages:\n%s", p.Output())
		}
		<-time.After(10 * time.Millisecond)
	}
	cancel()
	<-done
	if strings.Contains(errb.String(), "event rejected") {
		t.Errorf("watch logged the refused messages one by one:\n%s", errb.String())
	}
}
