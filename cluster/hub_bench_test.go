package cluster

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/natstest"
)

// BenchmarkHubTasks is remote tasks per second (100-task fan-outs through
// three nodes, as BenchmarkFanoutRemote) through a hub of three server
// processes, for each replication (nats.replicas 1 or 3) and durability
// (nats.sync: the default interval, or always): what each setting costs a
// task, whose queue entry, acks, result and events are all writes. Each
// party connects to a server of its own (the requester and the nodes
// spread over the three).
func BenchmarkHubTasks(b *testing.B) {
	calls := 0
	for _, always := range []bool{false, true} {
		hub := natstest.Start(b, 3, natstest.Options{SyncAlways: always})
		for _, replicas := range []int{1, 3} {
			sync := "1s"
			if always {
				sync = "always"
			}
			b.Run(fmt.Sprintf("R%d/sync=%s", replicas, sync), func(b *testing.B) {
				// A prefix of its own for each call (the framework calls
				// with b.N 1 first): fresh streams, consumers and registry.
				calls++
				prefix := fmt.Sprintf("t%d%s%d", replicas, sync[:1], calls)
				dial := func(who string) *bus.Conn {
					i := 0
					if n, ok := strings.CutPrefix(who, "node-"); ok {
						_, _ = fmt.Sscan(n, &i)
					}
					// One server each, its peers not learned: the hub
					// looks like one server, so no party raises the
					// streams made with one replica to three.
					opts := []nats.Option{}
					if replicas == 1 {
						opts = append(opts, nats.IgnoreDiscoveredServers())
					}
					nc, err := nats.Connect(hub.URL(i%3), opts...)
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(nc.Close)
					c, err := bus.Wrap(nc, prefix)
					if err != nil {
						b.Fatal(err)
					}
					return c
				}
				c := dial("requester")
				if err := c.EnsureStreams(b.Context(), bus.StreamLimits{Replicas: replicas}); err != nil {
					b.Fatal(err)
				}
				benchFanoutOver(b, true, 100, dial)
				for _, name := range []string{c.Names().Tasks, c.Names().Results} {
					s, err := c.JetStream().Stream(b.Context(), name)
					if err != nil {
						b.Fatal(err)
					}
					if r := s.CachedInfo().Config.Replicas; r != replicas {
						b.Fatalf("stream %s has %d replicas, want %d", name, r, replicas)
					}
				}
			})
		}
	}
}
