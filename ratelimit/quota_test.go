package ratelimit

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

var testKey = messages.RateKey{Host: "api.example.com", Account: Fingerprint("sk-test"), Model: "m"}

// clock is a settable time for the Quota's tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func lease(t *testing.T, q *Quota, client string, lim messages.RateLimits, demand ...messages.RateDemand) messages.RateLeaseReply {
	t.Helper()
	r, err := q.Lease(context.Background(), messages.RateLeaseRequest{V: 1, Key: testKey, Client: client, Limits: lim, Demand: demand})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func shareOf(r messages.RateLeaseReply, run string) float64 {
	for _, s := range r.Shares {
		if s.Run == run {
			return s.RPS
		}
	}
	return 0
}

// Two runs split a key evenly; priority weighs the split; within a run
// the processes whose calls are the shallowest get the run's share; and
// however the leases overlap, the shares held never pass the limit.
func TestQuotaFairShares(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	q := NewQuota(QuotaOptions{Now: c.now})
	lim := messages.RateLimits{RPM: 600} // 10/s, 9/s handed out
	a := lease(t, q, "p1", lim, messages.RateDemand{Run: "A", Waiting: 5, Depth: 1})
	if got := shareOf(a, "A"); math.Abs(got-10*Safety) > 1e-9 {
		t.Fatalf("a run alone gets %v/s, want %v", got, 10*Safety)
	}
	b := lease(t, q, "p2", lim, messages.RateDemand{Run: "B", Waiting: 5, Depth: 1})
	if got := shareOf(b, "B"); got != 0 {
		t.Fatalf("B got %v/s while A holds the whole key", got)
	}
	c.add(600 * time.Millisecond)
	a = lease(t, q, "p1", lim, messages.RateDemand{Run: "A", Waiting: 5, Depth: 1})
	b = lease(t, q, "p2", lim, messages.RateDemand{Run: "B", Waiting: 5, Depth: 1})
	if sa, sb := shareOf(a, "A"), shareOf(b, "B"); math.Abs(sa-5*Safety) > 1e-9 || math.Abs(sb-5*Safety) > 1e-9 {
		t.Fatalf("A %v/s, B %v/s: want half each", sa, sb)
	}
	// Priority 2 against 1: two thirds.
	c.add(600 * time.Millisecond)
	lease(t, q, "p1", lim, messages.RateDemand{Run: "A", Waiting: 5, Depth: 1, Priority: 2})
	b = lease(t, q, "p2", lim, messages.RateDemand{Run: "B", Waiting: 5, Depth: 1})
	c.add(600 * time.Millisecond)
	a = lease(t, q, "p1", lim, messages.RateDemand{Run: "A", Waiting: 5, Depth: 1, Priority: 2})
	if sa, sb := shareOf(a, "A"), shareOf(b, "B"); math.Abs(sa-20*Safety/3) > 1e-9 || math.Abs(sb-10*Safety/3) > 1e-9 {
		t.Fatalf("priority 2:1 gave A %v/s, B %v/s: want 6 and 3", sa, sb)
	}
	// Run C's root waits in p3 while its children wait in p4: the root's
	// process gets all of C's share.
	c.add(1100 * time.Millisecond) // every lease ran out
	root := lease(t, q, "p3", lim, messages.RateDemand{Run: "C", Waiting: 1, Depth: 0})
	kids := lease(t, q, "p4", lim, messages.RateDemand{Run: "C", Waiting: 12, Depth: 1})
	if shareOf(kids, "C") != 0 || shareOf(root, "C") < 10*Safety-1e-9 {
		t.Fatalf("root %v/s, children %v/s: the parent goes first", shareOf(root, "C"), shareOf(kids, "C"))
	}
}

// Under any order of renewals the shares held at once stay within the
// limit (times Safety).
func TestQuotaNeverOverLimit(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	q := NewQuota(QuotaOptions{Now: c.now})
	lim := messages.RateLimits{RPM: 240}
	clients := []string{"p1", "p2", "p3", "p4", "p5", "p6"}
	for i := range 500 {
		id := clients[(i*7)%len(clients)]
		lease(t, q, id, lim, messages.RateDemand{Run: []string{"A", "B"}[i%2], Waiting: 1 + i%5, Depth: i % 2})
		c.add(time.Duration(37+i%90) * time.Millisecond)
		q.mu.Lock()
		k := q.keys[testKey.String()]
		held := 0.0
		for _, cl := range k.clients {
			if !c.now().After(cl.until) {
				for _, s := range cl.shares {
					held += s.rps
				}
			}
		}
		q.mu.Unlock()
		if held > 4*Safety+1e-9 {
			t.Fatalf("step %d: %v/s held, limit %v/s", i, held, 4*Safety)
		}
	}
}

// A 429 freezes the key for everyone: the notice goes out once per
// extension, and leases carry the time left.
func TestQuotaFreeze(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	var notices []messages.RateFrozen
	q := NewQuota(QuotaOptions{Now: c.now, OnFreeze: func(n messages.RateFrozen) { notices = append(notices, n) }})
	rep := messages.RateReport{V: 1, Key: testKey, Client: "p1", Status: 429, RetryAfterMS: 3000}
	if err := q.Report(context.Background(), rep); err != nil {
		t.Fatal(err)
	}
	c.add(time.Second)
	rep.RetryAfterMS = 1000 // ends before the first: no new notice
	_ = q.Report(context.Background(), rep)
	if len(notices) != 1 || notices[0].ForMS != 3000 || notices[0].Status != 429 {
		t.Fatalf("notices %+v", notices)
	}
	r := lease(t, q, "p2", messages.RateLimits{RPM: 60}, messages.RateDemand{Run: "A", Waiting: 1, Starved: true})
	if r.FrozenMS != 2000 {
		t.Errorf("frozen_ms %d, want 2000", r.FrozenMS)
	}
	if r.Shares[0].Burst != 0 {
		t.Error("a burst was handed out during a freeze")
	}
	if err := q.Report(context.Background(), messages.RateReport{V: 1, Key: testKey, Client: "p1", Status: 500}); err == nil {
		t.Error("a 500 froze the key")
	}
}
