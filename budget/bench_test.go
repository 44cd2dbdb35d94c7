package budget

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkAcquireRelease measures one uncontended Acquire (granted at
// once) plus its Release, through the Client.
func BenchmarkAcquireRelease(b *testing.B) {
	f := startWith(b, Limits{Tokens: 1 << 40, MaxConcurrent: 64}, false)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		id := fmt.Sprint("a", i)
		i++
		if _, err := f.cl.Acquire(ctx, Acquire{Agent: id, Kind: "worker", Estimate: 1000}, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := f.cl.Release(ctx, Release{Agent: id, Used: 10}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUsage measures Usage round trips from one caller.
func BenchmarkUsage(b *testing.B) {
	f := startWith(b, Limits{Tokens: 1 << 50}, false)
	f.acquire(b, "root", "", "root", 1<<49)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.cl.Usage(ctx, Usage{Agent: "root", Tokens: 1, ToolCalls: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUsageParallel measures Usage throughput with many agents
// reporting at once (one lease per goroutine, four levels deep).
func BenchmarkUsageParallel(b *testing.B) {
	f := startWith(b, Limits{Tokens: 1 << 50}, false)
	f.acquire(b, "root", "", "root", 1<<49)
	f.acquire(b, "w", "root", "worker", 1<<48)
	f.acquire(b, "p", "w", "planner", 1<<47)
	var n atomic.Int64
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		id := fmt.Sprint("e", n.Add(1))
		if _, err := f.cl.Acquire(ctx, Acquire{Agent: id, Parent: "p", Kind: "explore", Estimate: 1 << 30}, nil); err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			if _, err := f.cl.Usage(ctx, Usage{Agent: id, Tokens: 1}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkQueuedHandoff measures an Acquire that has to wait and is
// granted when the holder of the only slot releases it.
func BenchmarkQueuedHandoff(b *testing.B) {
	f := startWith(b, Limits{Tokens: 1 << 40, MaxConcurrent: 1}, false)
	ctx := context.Background()
	f.acquire(b, "a0", "", "worker", 10)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		prev, id := fmt.Sprint("a", i), fmt.Sprint("a", i+1)
		i++
		p := f.acquireAsync(ctx, Acquire{Agent: id, Kind: "worker", Estimate: 10})
		<-p.queued
		if _, err := f.cl.Release(ctx, Release{Agent: prev}); err != nil {
			b.Fatal(err)
		}
		if r := <-p.done; r.err != nil {
			b.Fatal(r.err)
		}
	}
}
