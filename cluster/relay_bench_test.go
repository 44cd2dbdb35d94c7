package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// The cost of the hop events from nodes take through their run's
// requester (issue 29: at most 10 % of events/s). Both benchmarks emit b.N
// events from 16 agents at once, each from its own goroutine, and stop the
// clock when a subscriber on its own connection (as watch is) has received
// all of them from the events stream; any event lost fails them.
//
//   - BenchmarkEventsDirect is the path before: each agent's events
//     published on the events subjects by its process's publisher;
//   - BenchmarkEventsRelayed is the path now: 16 tasks of one run on a node,
//     one agent each, their events relayed by the node (its own
//     connection) to the run's requester, which checks them and publishes
//     them with its publisher.
//
// Each reports events/s and the CPU time per event the whole path took.
// Run: go test -run '^$' -bench 'Events(Direct|Relayed)$' -benchtime 300000x -count 3 ./cluster
func BenchmarkEventsDirect(b *testing.B) {
	benchEvents(b, func(_ *testing.B, _, _ *bus.Conn, pub *bus.Publisher, run string, agents int) ([]actors.Emitter, func()) {
		out := make([]actors.Emitter, agents)
		for i := range out {
			out[i] = pub
		}
		return out, func() {}
	})
}

func BenchmarkEventsRelayed(b *testing.B) {
	benchEvents(b, func(b *testing.B, requester, node *bus.Conn, pub *bus.Publisher, run string, agents int) ([]actors.Emitter, func()) {
		remote, err := StartRemote(context.Background(), RemoteOptions{Bus: requester, Run: run, Relay: pub, Log: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		var counts relayCounts
		out := make([]actors.Emitter, agents)
		relays := make([]*eventRelay, agents)
		for i := range out {
			task := fmt.Sprintf("agent-%d", i)
			relays[i] = newEventRelay(node, run, task, waitingTask(remote, task, "n1"), &counts, b.N, zerolog.Nop())
			out[i] = relays[i]
		}
		return out, func() {
			for _, r := range relays {
				r.close()
			}
			remote.Close()
			if counts.dropped.Load()+counts.refused.Load() != 0 || remote.Stats().Events != 0 {
				b.Fatalf("relay: %d dropped, %d refused", counts.dropped.Load(), counts.refused.Load())
			}
		}
	})
}

// benchEvents measures events/s from agents emitters (as route makes
// them) to a subscriber of the stream.
func benchEvents(b *testing.B, route func(b *testing.B, requester, node *bus.Conn, pub *bus.Publisher, run string, agents int) ([]actors.Emitter, func())) {
	const agents = 16
	s := natsServer(b)
	requester, node, watcher := wrap(b, connect(b, s)), wrap(b, connect(b, s)), wrap(b, connect(b, s))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := requester.EnsureStreams(ctx, bus.StreamLimits{}); err != nil {
		b.Fatal(err)
	}
	pub, err := requester.NewPublisher(bus.PublisherOptions{Queue: max(b.N, 1<<16), Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	run := fmt.Sprintf("bench%d", b.N)
	es, err := watcher.Events(ctx, bus.WatchOptions{Run: run})
	if err != nil {
		b.Fatal(err)
	}
	defer es.Stop()
	out, done := route(b, requester, node, pub, run, agents)
	evs := make([][]messages.Event, agents)
	for i := 0; i < b.N; i++ {
		a := i % agents
		ev, err := messages.NewEvent(run, fmt.Sprintf("agent-%d", a), messages.EvtToolStarted, uint64(len(evs[a])+1),
			messages.ToolStarted{Tool: "grep", CallID: fmt.Sprintf("c%d", i), Args: []byte(`{"pattern":"func main"}`)})
		if err != nil {
			b.Fatal(err)
		}
		ev.Kind, ev.Node = "explore", "n1"
		evs[a] = append(evs[a], ev)
	}
	var wg sync.WaitGroup
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime()
	for a, mine := range evs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, ev := range mine {
				out[a].Emit(ev)
			}
		}()
	}
	for n := 0; n < b.N; n++ {
		select {
		case <-es.C:
		case <-ctx.Done():
			b.Fatalf("received %d of %d (publisher dropped %d)", n, b.N, pub.Dropped())
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
	// The CPU time all of it took (publishers, node, requester, NATS server
	// and subscriber all run in this process), per event: what the machine
	// pays whatever else shares its cores.
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/event")
	wg.Wait()
	done()
	if err := pub.Close(ctx); err != nil || pub.Dropped() != 0 || es.RejectedTotal() != 0 {
		b.Fatalf("publisher: %v, dropped %d, rejected %v", err, pub.Dropped(), es.Rejected())
	}
}
