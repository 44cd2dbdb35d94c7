package webserver

import (
	"context"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
)

// The web view's queue depth reads the task stream of the connection's
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
		if got := queueDepth(t.Context(), c)(); got != float64(n) {
			t.Errorf("prefix %s: queue depth %v, want %d", p, got, n)
		}
	}
}
