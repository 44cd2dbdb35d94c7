package bus

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// BenchmarkPublisherEmit is the cost an agent pays per event: Emit only
// enqueues. The queue is drained by the publisher meanwhile.
func BenchmarkPublisherEmit(b *testing.B) {
	_, c := embedded(b)
	p, err := c.NewPublisher(PublisherOptions{Queue: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	ev := event(b, "bench", "root", 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ev.Seq = uint64(i + 1)
		p.Emit(ev)
	}
	b.StopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = p.Close(ctx)
}

// BenchmarkEventsThroughput is events per second from agents to one
// subscriber on loopback, with zero loss: b.N events are emitted, and the
// clock stops when the subscriber has received all of them.
func BenchmarkEventsThroughput(b *testing.B) {
	_, c := embedded(b)
	p, err := c.NewPublisher(PublisherOptions{Queue: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	es, err := c.Events(ctx, WatchOptions{Run: "tput"})
	if err != nil {
		b.Fatal(err)
	}
	evs := make([]messages.Event, b.N)
	for i := range evs {
		evs[i] = event(b, "tput", "root", uint64(i+1))
	}
	b.ResetTimer()
	start := time.Now()
	go func() {
		for _, ev := range evs {
			p.Emit(ev)
		}
	}()
	for n := 0; n < b.N; n++ {
		select {
		case <-es.C:
		case <-time.After(30 * time.Second):
			b.Fatalf("received %d of %d (dropped %d)", n, b.N, p.Dropped())
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
	if p.Dropped() != 0 {
		b.Fatalf("dropped %d", p.Dropped())
	}
	_ = p.Close(ctx)
}
