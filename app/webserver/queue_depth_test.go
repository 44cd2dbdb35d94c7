package webserver

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/watch"
)

// waitDepth waits until mon has read the queue, then wants depth n.
func waitDepth(t *testing.T, prefix string, mon *watch.Monitor, n int64) {
	t.Helper()
	for {
		if d := mon.Stats().QueueDepth; d != nil && *d == n {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("prefix %s: queue depth %v, want %d", prefix, mon.Stats().QueueDepth, n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// The web view's queue depth (its Monitor) reads the task stream of the connection's
// prefix, not the default prefix's.
func TestQueueDepthOfThePrefix(t *testing.T) {
	e, err := bus.StartEmbedded(t.Context(), bus.EmbeddedOptions{Ephemeral: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	for _, p := range []string{bus.DefaultPrefix, "alpha"} {
		c, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: e.URL(), Prefix: p}, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.EnsureStreams(t.Context(), bus.StreamLimits{}); err != nil {
			t.Fatal(err)
		}
		n := map[string]int{bus.DefaultPrefix: 1, "alpha": 3}[p]
		for i := 0; i < n; i++ {
			if _, err := c.JetStream().Publish(t.Context(), bus.TaskSubject(p, "explore", 1), []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
		mon := watch.StartMonitor(t.Context(), watch.MonitorOptions{Conn: c, QueuePeriod: 20 * time.Millisecond})
		waitDepth(t, p, mon, int64(n))
		mon.Close()
	}
}
