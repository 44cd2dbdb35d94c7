package bus

import (
	"fmt"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/internal/natstest"
)

// BenchmarkHubEvents is events per second from 16 agents to a watcher
// through a hub of three server processes, for each replication
// (nats.replicas 1 or 3) and durability (nats.sync: the default interval,
// or always): what each setting costs.
func BenchmarkHubEvents(b *testing.B) {
	for _, always := range []bool{false, true} {
		hub := natstest.Start(b, 3, natstest.Options{SyncAlways: always})
		for _, replicas := range []int{1, 3} {
			sync := "1s"
			if always {
				sync = "always"
			}
			b.Run(fmt.Sprintf("R%d/sync=%s", replicas, sync), func(b *testing.B) {
				c, err := Connect(b.Context(), ConnectOptions{URLs: hub.URLs(), Prefix: fmt.Sprintf("r%d%s", replicas, sync[:1])}, zerolog.Nop())
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				if err := c.EnsureStreams(b.Context(), StreamLimits{Replicas: replicas}); err != nil {
					b.Fatal(err)
				}
				benchThroughputOn(b, hub.URLs(), c, 16)
			})
		}
	}
}
