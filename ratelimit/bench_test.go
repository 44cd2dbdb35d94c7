package ratelimit

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchmarkWaitUnlimited is what the limiter adds to a model call when no
// limit is known (the common case: no header seen, none configured): a
// Wait and a Settle, one process, from many goroutines at once as a
// fan-out's agents call. Compare with llm's BenchmarkRoundTrip, the
// in-process model round trip it sits in front of.
func BenchmarkWaitUnlimited(b *testing.B) {
	l := NewLimiter(NewQuota(QuotaOptions{}), LimiterOptions{Client: "bench"})
	defer l.Close()
	var runs atomic.Int64
	b.SetParallelism(8)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		t := Ticket{Key: testKey, Run: "r" + strconv.FormatInt(runs.Add(1)%4, 10), Tokens: 1000}
		for pb.Next() {
			p, err := l.Wait(context.Background(), t, nil)
			if err != nil {
				b.Error(err)
				return
			}
			p.Settle(Outcome{Status: 200, Used: 800})
		}
	})
}
