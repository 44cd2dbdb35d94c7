package main

import (
	"context"
	"regexp"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// When the run's events cannot be published, the summary says how many
// were lost. Here the server's TROUPE_EVENTS holds one message and refuses
// more (an existing stream's limits are kept when no config sets them), so
// JetStream refuses the events and each one is counted as dropped.
func TestRunSummaryCountsDroppedEvents(t *testing.T) {
	e, c := embeddedServer(t)
	if _, err := c.JetStream().CreateStream(t.Context(), fullEventsStream); err != nil {
		t.Fatal(err)
	}
	srv := scripted(t, llmtest.Turn{Text: "done"})
	code, out, errs := runCmd(t, t.Context(), testEnv(srv, t.TempDir()), false, "--workspace", t.TempDir(), "--model", "m1",
		"--nats", e.URL(), "--quiet", "say done")
	if code != exitOK || out != "done\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errs)
	}
	if !regexp.MustCompile(`\nevents: [1-9][0-9]* could not be published \(NATS was unreachable or refused them`).MatchString(errs) {
		t.Errorf("stderr lacks the dropped-events line:\n%s", errs)
	}
}

// fullEventsStream is an events stream that takes one message and refuses
// every one after it.
var fullEventsStream = jetstream.StreamConfig{Name: bus.EventsStream, Subjects: []string{"troupe.evt.>"},
	MaxMsgs: 1, Discard: jetstream.DiscardNew}

// embeddedServer starts a JetStream server for a run to connect to with
// --nats, and connects to it as the test.
func embeddedServer(t testing.TB) (*bus.Embedded, *bus.Conn) {
	t.Helper()
	e, err := bus.StartEmbedded(t.Context(), bus.EmbeddedOptions{StoreDir: t.TempDir()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	c, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: e.URL()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return e, c
}
