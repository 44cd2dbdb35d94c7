package bus

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// The results stream keeps the first message of a subject: a second one
// on it is refused by the server, and the first stays. A stream made by
// an earlier troupe (where the second replaced the first) is brought to
// that by KeepFirstResults, its results kept. On the embedded server and
// on the Debian nats-server (2.9).
func TestResultsStreamKeepsTheFirstOfASubject(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		_, c := embedded(t)
		_, fresh := embedded(t)
		firstResultStays(t, c, fresh)
	})
	t.Run("external", func(t *testing.T) {
		conn := func() *Conn {
			c, err := Connect(t.Context(), ConnectOptions{URLs: newExternalServer(t).url()}, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			if err := c.EnsureStreams(t.Context(), StreamLimits{}); err != nil {
				t.Fatal(err)
			}
			return c
		}
		firstResultStays(t, conn(), conn())
	})
}

// firstResultStays checks c's results stream, first made as an older
// troupe made it, and fresh's, as EnsureStreams made it.
func firstResultStays(t *testing.T, c, fresh *Conn) {
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
