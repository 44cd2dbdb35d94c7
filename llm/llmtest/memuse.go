package llmtest

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// MemUse is what a call cost the process, for tests of hostile answers:
// the bytes it allocated (the server's share included: it makes its flood
// as it writes it), and the most heap (live and not yet collected) seen
// above the heap before it.
type MemUse struct {
	Allocated, Peak uint64
}

func (m MemUse) String() string {
	return fmt.Sprintf("%.1f MiB allocated, heap peak %.1f MiB over the start", float64(m.Allocated)/(1<<20), float64(m.Peak)/(1<<20))
}

// Measure runs fn and returns its MemUse. The heap is sampled every
// 200µs; a sample can only miss a peak, never invent one. While fn runs
// the collector runs once the heap grows 10 % over what was live (not
// the default 100 %), so garbage a loaded machine's collector has not
// come round to yet counts little, and a bound on the peak is a bound on
// what fn kept, not on how busy the machine was.
func Measure(fn func()) MemUse {
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(heap); return heap[0].Value.Uint64() }
	var before, after runtime.MemStats
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	runtime.ReadMemStats(&before)
	base := read()
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		var peak uint64
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-stop:
				done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(stop)
	peak := <-done
	runtime.ReadMemStats(&after)
	return MemUse{Allocated: after.TotalAlloc - before.TotalAlloc, Peak: max(peak, base) - base}
}
