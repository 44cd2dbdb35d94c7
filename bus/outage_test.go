package bus

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// Against a real nats-server process that is stopped mid-run and started
// again: Emit keeps going while the server is away, publishing resumes
// after it is back, and every event the publisher did not count as dropped
// is in the stream (received ≥ emitted − dropped).
func TestPublisherSurvivesServerRestart(t *testing.T) {
	srv := newExternalServer(t)
	c, err := Connect(t.Context(), ConnectOptions{URLs: srv.url()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.EnsureStreams(t.Context(), StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	p, err := c.NewPublisher(PublisherOptions{AckTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var emitted atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // an agent emitting steadily, never waiting on NATS
		defer close(done)
		for s := uint64(1); ; s++ {
			select {
			case <-stop:
				return
			default:
			}
			p.Emit(event(t, "outage", "root", s))
			emitted.Add(1)
			if s%50 == 0 {
				<-time.After(time.Millisecond) // pace: a few thousand events a second
			}
		}
	}()
	checkFor(t, 10*time.Second, func() error { return waitCount(p.Published(), 500) })
	srv.stop()
	before := emitted.Load()
	checkFor(t, 10*time.Second, func() error { return waitCount(emitted.Load(), before+2000) }) // not blocked
	srv.start()
	after := p.Published()
	checkFor(t, 30*time.Second, func() error { return waitCount(p.Published(), after+500) }) // publishing again
	close(stop)
	<-done
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	total := emitted.Load()
	if p.Emitted() != total || p.Published()+p.Dropped() != total {
		t.Fatalf("emitted %d: published %d + dropped %d", total, p.Published(), p.Dropped())
	}
	s, err := c.JetStream().Stream(t.Context(), EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := info.State.Msgs; got+p.Dropped() < total || got > total {
		t.Errorf("stream holds %d of %d emitted events with %d counted as dropped", got, total, p.Dropped())
	}
	t.Logf("emitted %d, published %d, dropped %d, stored %d", total, p.Published(), p.Dropped(), info.State.Msgs)
}

func waitCount(got, want uint64) error {
	if got < want {
		return fmt.Errorf("have %d, want %d", got, want)
	}
	return nil
}
