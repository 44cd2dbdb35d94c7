package bus

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// The results stream keeps the first message of a subject: a second one
// on it is refused by the server, and the first stays. A stream made by
// an earlier troupe (where the second replaced the first) is brought to
// that by KeepFirstResults, its results kept.
func TestResultsStreamKeepsTheFirstOfASubject(t *testing.T) {
	_, c := embedded(t)
	ctx := t.Context()
	js := c.JetStream()
	s, err := js.Stream(ctx, ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	// As an earlier troupe made it: the last message of a subject stays.
	cfg := s.CachedInfo().Config
	cfg.Discard, cfg.DiscardNewPerSubject = jetstream.DiscardOld, false
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	subj := ResultSubject(DefaultPrefix, "r1", "explore-1", "00ff")
	if _, err := js.Publish(ctx, subj, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, subj, []byte("second")); err != nil {
		t.Fatalf("the old stream refused a second message: %v", err)
	}
	if err := c.KeepFirstResults(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.KeepFirstResults(ctx); err != nil {
		t.Fatalf("a second call: %v", err)
	}
	if _, err := js.Publish(ctx, subj, []byte("third")); err == nil {
		t.Fatal("a message replaced the stored result of its subject")
	}
	m, err := s.GetLastMsgForSubject(ctx, subj)
	if err != nil || string(m.Data) != "second" {
		t.Fatalf("the stored result: %v %v", m, err)
	}
	other := ResultSubject(DefaultPrefix, "r1", "explore-1", "00fe")
	if _, err := js.Publish(ctx, other, []byte("another delivery")); err != nil {
		t.Fatalf("another subject: %v", err)
	}
	// A stream EnsureStreams makes keeps the first from the start.
	_, fresh := embedded(t)
	if _, err := fresh.JetStream().Publish(ctx, subj, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.JetStream().Publish(ctx, subj, []byte("second")); err == nil {
		t.Fatal("a new stream let a second message replace the first")
	}
	// A node's publish retried (the same message ID) is a duplicate, not
	// an error.
	retried := ResultSubject(DefaultPrefix, "r1", "explore-2", "00ff")
	for i := range 2 {
		ack, err := fresh.JetStream().Publish(ctx, retried, []byte("result"), jetstream.WithMsgID("r1.explore-2.result.1"))
		if err != nil || ack.Duplicate != (i == 1) {
			t.Fatalf("publish %d: %+v %v", i, ack, err)
		}
	}
}
