package ratelimit

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// counted counts the calls reaching a Quota (a process's round trips).
type counted struct {
	*Quota
	leases atomic.Int64
}

func (c *counted) Lease(ctx context.Context, r messages.RateLeaseRequest) (messages.RateLeaseReply, error) {
	c.leases.Add(1)
	return c.Quota.Lease(ctx, r)
}

// hub is one Quota and the Limiters of several processes, freeze notices
// reaching every process as the NATS service spreads them.
type hub struct {
	q     *counted
	procs []*Limiter
}

func newHub(t *testing.T, n int) *hub {
	h := &hub{}
	h.q = &counted{Quota: NewQuota(QuotaOptions{OnFreeze: func(f messages.RateFrozen) {
		for _, p := range h.procs {
			p.Frozen(f)
		}
	}})}
	for i := range n {
		h.procs = append(h.procs, NewLimiter(h.q, LimiterOptions{Client: "p" + string(rune('1'+i))}))
	}
	t.Cleanup(func() {
		for _, p := range h.procs {
			p.Close()
		}
	})
	return h
}

// A key with no known limit costs nothing: no round trip, no wait.
func TestUnlimitedKeyGoesAtOnce(t *testing.T) {
	h := newHub(t, 1)
	for range 1000 {
		p, err := h.procs[0].Wait(context.Background(), Ticket{Key: testKey, Run: "A", Tokens: 100}, func(WaitInfo) { t.Fatal("waited") })
		if err != nil {
			t.Fatal(err)
		}
		p.Settle(Outcome{Status: 200, Used: 50})
	}
	if n := h.q.leases.Load(); n != 0 {
		t.Errorf("%d leases asked for a key without limits", n)
	}
}

// Three processes, two runs each, fifteen callers in all hammer a key
// limited to 10 requests a second: a provider enforcing 10/s (a bucket of
// 10) would refuse none of what the limiter lets through, and the runs
// share it evenly. (Counts of the permits, not timings, are asserted; a
// loaded machine only lets fewer through.)
func TestSharedPacing(t *testing.T) {
	h := newHub(t, 3)
	lim := messages.RateLimits{RPM: 600}
	var mu sync.Mutex
	var at []time.Time
	perRun := map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 15 {
		proc, run := h.procs[i%3], []string{"A", "B"}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				p, err := proc.Wait(ctx, Ticket{Key: testKey, Limits: lim, Run: run, Depth: 1, Tokens: 10}, nil)
				if err != nil {
					return
				}
				mu.Lock()
				at = append(at, time.Now())
				perRun[run]++
				mu.Unlock()
				p.Settle(Outcome{Status: 200, Used: 10})
			}
		}()
	}
	wg.Wait()
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	refused := providerRefusals(at, 10, 10)
	t.Logf("%d permits in 3 s (limit 10/s), runs %v, a 10/s provider would refuse %d, %d leases",
		len(at), perRun, refused, h.q.leases.Load())
	if refused > len(at)/50 {
		t.Errorf("a provider would refuse %d of %d calls", refused, len(at))
	}
	if len(at) < 12 {
		t.Errorf("only %d permits in 3 s", len(at))
	}
	if a, b := perRun["A"], perRun["B"]; a < (a+b)*35/100 || b < (a+b)*35/100 {
		t.Errorf("runs got %d and %d: not an even split", a, b)
	}
}

// providerRefusals plays a provider's per-second bucket (capacity burst,
// refilled at rate/s, starting full) over the calls' times.
func providerRefusals(at []time.Time, rate, burst float64) int {
	level, last, refused := burst, time.Time{}, 0
	for i, t := range at {
		if i > 0 {
			level = min(burst, level+t.Sub(last).Seconds()*rate)
		}
		last = t
		if level < 1 {
			refused++
			continue
		}
		level--
	}
	return refused
}

// A 429 in one process freezes the key in every process until its
// retry-after, each waiting call then adding its own jitter; nothing is
// let through meanwhile.
func TestFreezeHoldsEveryProcess(t *testing.T) {
	h := newHub(t, 2)
	var j atomic.Int64
	for _, p := range h.procs {
		p.jitter = func() time.Duration { return time.Duration(j.Add(1)%5) * 40 * time.Millisecond }
	}
	lim := messages.RateLimits{RPM: 6000}
	first, err := h.procs[0].Wait(context.Background(), Ticket{Key: testKey, Limits: lim, Run: "A", Tokens: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hdr := http.Header{}
	hdr.Set("retry-after-ms", "300")
	frozeAt := time.Now()
	first.Settle(Outcome{Status: 429, Header: hdr, Used: -1})
	// The notice reaches the other process through the owner.
	for {
		h.procs[1].mu.Lock()
		k := h.procs[1].keys[testKey.String()]
		frozen := k != nil && k.frozenUntil.After(frozeAt)
		h.procs[1].mu.Unlock()
		if frozen {
			break
		}
		select {
		case <-t.Context().Done():
			t.Fatal("the other process never heard of the freeze")
		case <-time.After(time.Millisecond):
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got []time.Time
	var reasons []WaitInfo
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := h.procs[i%2].Wait(context.Background(), Ticket{Key: testKey, Limits: lim, Run: "A", Tokens: 1}, func(w WaitInfo) {
				mu.Lock()
				reasons = append(reasons, w)
				mu.Unlock()
			})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got = append(got, time.Now())
			mu.Unlock()
			p.Settle(Outcome{Status: 200, Used: 1})
		}()
	}
	wg.Wait()
	for _, g := range got {
		if g.Sub(frozeAt) < 300*time.Millisecond {
			t.Errorf("a call went %v after the 429, before its retry-after of 300ms", g.Sub(frozeAt))
		}
	}
	for _, w := range reasons {
		if w.Reason != ReasonFrozen || w.Status != 429 || w.Left <= 0 {
			t.Errorf("wait info %+v", w)
		}
	}
	if len(reasons) != 6 {
		t.Errorf("%d of 6 calls were told they wait", len(reasons))
	}
}

// A waiting call whose context ends leaves the queue at once.
func TestWaitCancelled(t *testing.T) {
	h := newHub(t, 1)
	hdr := http.Header{}
	hdr.Set("retry-after", "30")
	p, _ := h.procs[0].Wait(context.Background(), Ticket{Key: testKey, Run: "A"}, nil)
	p.Settle(Outcome{Status: 429, Header: hdr, Used: -1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := h.procs[0].Wait(ctx, Ticket{Key: testKey, Run: "A"}, func(WaitInfo) { cancel() })
		done <- err
	}()
	if err := <-done; err != context.Canceled {
		t.Fatalf("err %v", err)
	}
	h.procs[0].mu.Lock()
	defer h.procs[0].mu.Unlock()
	if n := len(h.procs[0].keys[testKey.String()].runs["A"].waiters); n != 0 {
		t.Errorf("%d waiters left", n)
	}
}
