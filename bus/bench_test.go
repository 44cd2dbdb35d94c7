package bus

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
)

// BenchmarkPublisherEmit is the cost an agent pays per event (goal under
// 2 µs): Emit only enqueues, while the publisher drains the queue. Every
// half queue the clock stops until the publisher has caught up, so a full
// queue never turns the measure into one of the drop path; an event
// dropped fails the benchmark.
func BenchmarkPublisherEmit(b *testing.B) {
	_, c := embedded(b)
	const queue = 1 << 16
	p, err := c.NewPublisher(PublisherOptions{Queue: queue})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ev := event(b, "bench", "root", 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i > 0 && i%(queue/2) == 0 {
			b.StopTimer()
			if err := p.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		ev.Seq = uint64(i + 1)
		p.Emit(ev)
	}
	b.StopTimer()
	if err := p.Close(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(p.Dropped()), "dropped")
	if p.Dropped() != 0 || p.Published() != uint64(b.N) {
		b.Fatalf("emitted %d: published %d, dropped %d", b.N, p.Published(), p.Dropped())
	}
}

// BenchmarkEventsThroughput is events per second from one agent to one
// subscriber on loopback, with zero loss: b.N events are emitted, and the
// clock stops when the subscriber has received all of them.
func BenchmarkEventsThroughput(b *testing.B) {
	benchThroughput(b, 1)
}

// BenchmarkEventsThroughputAgents is events per second end to end (goal
// at least 100,000 on loopback) from 16 agents emitting at once, each from
// its own goroutine as agent actors do, to one subscriber on its own
// connection, as watch is; with zero loss.
func BenchmarkEventsThroughputAgents(b *testing.B) {
	benchThroughput(b, 16)
}

// benchThroughput emits b.N events from agents goroutines and receives
// them on a second connection. The queue holds b.N events, so that what is
// measured is the publish path; any event dropped, rejected or missing
// fails the benchmark.
func benchThroughput(b *testing.B, agents int) {
	e, c := embedded(b)
	benchThroughputOn(b, e.URL(), c, agents)
}

// benchThroughputOn is benchThroughput against the server(s) at url, c
// connected there.
func benchThroughputOn(b *testing.B, url string, c *Conn, agents int) {
	sub, err := Connect(context.Background(), ConnectOptions{URLs: url, Name: "bench watcher", Prefix: c.Prefix()}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	p, err := c.NewPublisher(PublisherOptions{Queue: max(b.N, 1<<16)})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := fmt.Sprintf("tput%d", b.N)
	es, err := sub.Events(ctx, WatchOptions{Run: run})
	if err != nil {
		b.Fatal(err)
	}
	evs := make([][]messages.Event, agents)
	for i := 0; i < b.N; i++ {
		a := i % agents
		evs[a] = append(evs[a], event(b, run, fmt.Sprintf("agent-%d", a), uint64(len(evs[a])+1)))
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	b.ResetTimer()
	start := time.Now()
	for _, mine := range evs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, ev := range mine {
				p.Emit(ev)
			}
		}()
	}
	for n := 0; n < b.N; n++ {
		select {
		case <-es.C:
		case <-ctx.Done():
			b.Fatalf("received %d of %d (dropped %d)", n, b.N, p.Dropped())
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
	b.ReportMetric(float64(p.Dropped()), "dropped")
	if p.Dropped() != 0 || es.RejectedTotal() != 0 {
		b.Fatalf("dropped %d, rejected %v", p.Dropped(), es.Rejected())
	}
	if err := p.Close(ctx); err != nil {
		b.Fatal(err)
	}
}
