package budget

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestStressExhaustion runs many agents against a run budget far smaller
// than their appetite. Each reports usage until told Exhausted, takes one
// wrap-up round, and releases. Checked: once the run is exhausted every
// Usage answers Exhausted (also for idle leases with tokens left), no
// lease runs past its grant by more than the response that used it up
// plus the wrap-up, and the run's total passes its limit by at most the
// responses of the agents live at that moment (≤ MaxConcurrent of them).
//
// The sentinels and leads hold their reservations to the end, so a queued
// acquire can wait for tokens that never come back: acquires therefore
// have a deadline, and should the agents all finish with the run still
// under its limit, a closer lease spends the rest, so that the checks
// after exhaustion always run.
func TestStressExhaustion(t *testing.T) {
	const (
		agents  = 150
		maxResp = 600
	)
	limits := Limits{Tokens: 30_000, MaxConcurrent: 16, AcquireTimeout: 5 * time.Second}
	f := start(t, limits)
	sentinels := []string{"s1", "s2", "s3"}
	for _, s := range sentinels {
		f.acquire(t, s, "", "root", 100)
	}
	const closer = "closer"
	f.acquire(t, closer, "", "root", 100)
	// Three long-lived leads give every other agent a parent to draw from.
	leads := []string{"lead0", "lead1", "lead2"}
	for _, l := range leads {
		f.acquire(t, l, "", "root", 5000)
	}
	reg := &registry{}
	runOver := make(chan struct{})
	var afterOver, lateOK atomic.Int64
	stopMonitor := make(chan struct{})
	var monitor sync.WaitGroup
	monitor.Go(func() {
		for {
			select {
			case <-stopMonitor:
				return
			default:
			}
			if s, err := f.cl.Snapshot(context.Background()); err == nil && s.Exhausted {
				close(runOver)
				return
			}
		}
	})
	over := func() bool {
		select {
		case <-runOver:
			return true
		default:
			return false
		}
	}

	var wg sync.WaitGroup
	for i := range agents {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(7, uint64(i)))
			id := fmt.Sprintf("x%03d", i)
			req := Acquire{Agent: id, Kind: "worker", Estimate: 1000 + rng.Int64N(3000)}
			if i%2 == 0 {
				req.Parent, req.Estimate = leads[i%3], 500+rng.Int64N(1500)
			} else if p, ok := reg.pick(rng); ok {
				req.Parent, req.Estimate = p.id, 1+rng.Int64N(p.est/2)
			}
			lease, err := f.cl.Acquire(context.Background(), req, nil)
			if err != nil {
				allowed := []error{ErrBudgetExhausted, ErrReleased, ErrUnknownAgent, ErrLimitExceeded, ErrAcquireTimeout}
				if !slices.ContainsFunc(allowed, func(e error) bool { return errors.Is(err, e) }) {
					t.Errorf("%s: unexpected acquire error %v", id, err)
				}
				return
			}
			reg.add(liveAgent{id, lease.Tokens})
			defer reg.remove(id)
			var used int64
			charge := func(topUp int64) State {
				wasOver := over()
				tok := 100 + rng.Int64N(maxResp-100+1)
				u, err := f.cl.Usage(context.Background(), Usage{Agent: id, Tokens: tok, TopUp: topUp})
				if err != nil {
					t.Errorf("%s: usage: %v", id, err)
				}
				used += tok
				if wasOver {
					afterOver.Add(1)
					if u.State == StateOK {
						lateOK.Add(1)
					}
				}
				return u.State
			}
			state := StateOK
			for round := 0; state == StateOK && round < 1000; round++ {
				state = charge(int64(rng.IntN(2)) * 500)
			}
			if state == StateExhausted {
				charge(0) // the wrap-up round
			}
			reg.remove(id)
			if _, err := f.cl.Release(context.Background(), Release{Agent: id, Used: used}); err != nil {
				t.Errorf("%s: release: %v", id, err)
			}
		})
	}
	wg.Wait()
	closed := 0
	for ; !f.snap(t).Exhausted && closed < 2*int(limits.Tokens)/maxResp; closed++ {
		if _, err := f.cl.Usage(ctxT(t), Usage{Agent: closer, Tokens: maxResp}); err != nil {
			t.Fatalf("closer usage: %v", err)
		}
	}
	close(stopMonitor)
	monitor.Wait()

	s := f.snap(t)
	if !s.Exhausted || s.ExhaustedBy != "tokens" {
		t.Fatalf("run not exhausted by tokens: %+v", s)
	}
	for _, id := range sentinels {
		u, err := f.cl.Usage(ctxT(t), Usage{Agent: id})
		if err != nil || u.State != StateExhausted || u.Remaining != 100 {
			t.Errorf("idle lease %s on an exhausted run: %+v, %v", id, u, err)
		}
	}
	if n := lateOK.Load(); n > 0 {
		t.Errorf("%d of %d usage reports sent after the run was seen exhausted were answered OK", n, afterOver.Load())
	}
	nested := 0
	for _, a := range s.Agents {
		if a.Agent == closer {
			continue // it spends past its grant on purpose
		}
		if over := a.Used.Tokens - a.Granted; over > 2*maxResp {
			t.Errorf("%s used %d of a %d grant: more than the exhausting response and the wrap-up past it", a.Agent, a.Used.Tokens, a.Granted)
		}
		// A sub-tree stays within its root's grant but for each member's
		// own overshoot.
		if over := a.Subtree.Tokens - a.Granted; over > 2*maxResp*int64(1+a.Descendants) {
			t.Errorf("%s's sub-tree (%d agents) used %d of a %d grant", a.Agent, 1+a.Descendants, a.Subtree.Tokens, a.Granted)
		}
		if a.Descendants > 0 {
			nested++
		}
	}
	if nested == 0 {
		t.Error("no agent had children: the sub-tree bound was not exercised")
	}
	if bound := limits.Tokens + maxResp*(1+2*int64(limits.MaxConcurrent)); s.Used.Tokens > bound {
		t.Errorf("run used %d tokens, over its %d limit by more than the responses in flight (bound %d)", s.Used.Tokens, limits.Tokens, bound)
	}
	t.Logf("run used %d of %d tokens; %d agents with children; %d usage reports after the run was seen exhausted; closer rounds %d",
		s.Used.Tokens, limits.Tokens, nested, afterOver.Load(), closed)
}
