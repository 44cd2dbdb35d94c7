package budget

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestFIFONoOvertaking(t *testing.T) {
	f := start(t, Limits{Tokens: 100})
	f.acquire(t, "a", "", "root", 60)
	big := f.acquireAsync(ctxT(t), Acquire{Agent: "big", Kind: "root", Estimate: 50})
	if q := big.mustQueue(t); q.Position != 1 || q.Reason != "tokens" || q.Pool != "run" {
		t.Fatalf("big queued = %+v", q)
	}
	// 40 tokens are free and small needs 30, but big came first.
	small := f.acquireAsync(ctxT(t), Acquire{Agent: "small", Kind: "root", Estimate: 30})
	if q := small.mustQueue(t); q.Position != 2 || q.Reason != "tokens" {
		t.Fatalf("small queued = %+v", q)
	}
	if s := f.snap(t); s.Waiting != 2 || s.Reserved != 60 {
		t.Fatalf("small overtook big: waiting %d reserved %d", s.Waiting, s.Reserved)
	}
	f.release(t, "a", 0)
	b, s := big.wait(t), small.wait(t)
	if b.err != nil || s.err != nil {
		t.Fatalf("big %v small %v", b.err, s.err)
	}
	if b.lease.Ticket != 2 || s.lease.Ticket != 3 || b.lease.Order >= s.lease.Order {
		t.Fatalf("grant order: big %+v small %+v", b.lease, s.lease)
	}
}

func TestSlotCaps(t *testing.T) {
	f := start(t, Limits{Tokens: 1000, MaxConcurrent: 2, PerKind: map[string]int{"explore": 1}})
	f.acquire(t, "w1", "", "worker", 10)
	f.acquire(t, "e1", "", "explore", 10)
	e2 := f.acquireAsync(ctxT(t), Acquire{Agent: "e2", Kind: "explore", Estimate: 10})
	if q := e2.mustQueue(t); q.Reason != "slots" || q.Pool != "slots:explore" {
		t.Fatalf("e2 queued = %+v", q)
	}
	w2 := f.acquireAsync(ctxT(t), Acquire{Agent: "w2", Kind: "worker", Estimate: 10})
	if q := w2.mustQueue(t); q.Reason != "slots" || q.Pool != "slots" || q.Position != 2 {
		t.Fatalf("w2 queued = %+v", q)
	}
	f.release(t, "e1", 0) // one global slot and the explore slot free: e2 first
	if r := e2.wait(t); r.err != nil {
		t.Fatal(r.err)
	}
	if s := f.snap(t); s.Waiting != 1 || s.Slots != 2 || s.KindSlots["explore"] != 1 {
		t.Fatalf("after e1 ended: %+v", s)
	}
	f.release(t, "w1", 0)
	if r := w2.wait(t); r.err != nil {
		t.Fatal(r.err)
	}
}

func TestWaitOnOnePoolDoesNotBlockAnother(t *testing.T) {
	f := start(t, Limits{Tokens: 1000, PerKind: map[string]int{"explore": 1}})
	f.acquire(t, "root", "", "root", 100)
	f.acquire(t, "w1", "root", "worker", 80)
	f.acquire(t, "e1", "", "explore", 10)
	// Two requests wait on different pools: explore slots and root's tokens.
	f.acquireAsync(ctxT(t), Acquire{Agent: "e2", Kind: "explore", Estimate: 10}).mustQueue(t)
	f.acquireAsync(ctxT(t), Acquire{Agent: "w2", Parent: "root", Kind: "worker", Estimate: 50}).mustQueue(t)
	// Neither holds up a worker drawing from the run, nor a planner child
	// of w1: root's queue is about root's pool, not w1's (nested
	// delegation under a busy parent must not deadlock).
	f.acquire(t, "w3", "", "worker", 10)
	f.acquire(t, "p1", "w1", "planner", 5)
	// A small root child still may not overtake w2.
	f.acquireAsync(ctxT(t), Acquire{Agent: "p2", Parent: "root", Kind: "planner", Estimate: 5}).mustQueue(t)
	if s := f.snap(t); s.Waiting != 3 {
		t.Fatalf("waiting %d, want e2, w2, p2", s.Waiting)
	}
}

func TestAcquireDeadline(t *testing.T) {
	f := start(t, Limits{Tokens: 100, AcquireTimeout: 30 * time.Millisecond})
	f.acquire(t, "a", "", "root", 100)
	_, err := f.cl.Acquire(ctxT(t), Acquire{Agent: "b", Kind: "root", Estimate: 10}, nil)
	if !errors.Is(err, ErrAcquireTimeout) {
		t.Fatalf("default deadline: %v, want ErrAcquireTimeout", err)
	}
	_, err = f.cl.Acquire(ctxT(t), Acquire{Agent: "c", Kind: "root", Estimate: 10,
		Deadline: time.Now().Add(20 * time.Millisecond)}, nil)
	if !errors.Is(err, ErrAcquireTimeout) {
		t.Fatalf("explicit deadline: %v, want ErrAcquireTimeout", err)
	}
	ctx, cancel := context.WithTimeout(ctxT(t), 20*time.Millisecond)
	defer cancel()
	_, err = f.cl.Acquire(ctx, Acquire{Agent: "d", Kind: "root", Estimate: 10}, nil)
	if !errors.Is(err, ErrAcquireTimeout) {
		t.Fatalf("context deadline: %v, want ErrAcquireTimeout", err)
	}
	s := f.snap(t)
	if s.Waiting != 0 || s.Reserved != 100 || len(s.Agents) != 1 {
		t.Fatalf("timed-out requests left something behind: %+v", s)
	}
	// After they gave up, the pool serves as if they never came.
	f.release(t, "a", 0)
	f.acquire(t, "e", "", "root", 100)
}

func TestAcquireCancelWithdraws(t *testing.T) {
	f := start(t, Limits{Tokens: 100})
	f.acquire(t, "a", "", "root", 100)
	ctx, cancel := context.WithCancel(ctxT(t))
	p := f.acquireAsync(ctx, Acquire{Agent: "b", Kind: "root", Estimate: 50})
	p.mustQueue(t)
	cancel()
	if r := p.wait(t); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled acquire: %v", r.err)
	}
	if s := f.snap(t); s.Waiting != 0 {
		t.Fatalf("withdrawn request still waits: %+v", s)
	}
	f.release(t, "a", 0)
	if s := f.snap(t); s.Reserved != 0 || len(s.Agents) != 1 {
		t.Fatalf("withdrawn request was granted: %+v", s)
	}
}

func TestReleaseWithdrawsQueuedAcquire(t *testing.T) {
	f := start(t, Limits{Tokens: 100})
	f.acquire(t, "a", "", "root", 100)
	p := f.acquireAsync(ctxT(t), Acquire{Agent: "b", Kind: "root", Estimate: 50})
	p.mustQueue(t)
	if rel := f.release(t, "b", 0); rel.Already || rel.Returned != 0 {
		t.Fatalf("release of a queued agent = %+v", rel)
	}
	if r := p.wait(t); !errors.Is(r.err, ErrWithdrawn) {
		t.Fatalf("withdrawn acquire: %v", r.err)
	}
}

func TestWallTime(t *testing.T) {
	f := start(t, Limits{Tokens: 100, WallTime: 20 * time.Millisecond})
	checkFor(t, waitLong, 5*time.Millisecond, func() error {
		if s := f.snap(t); s.ExhaustedBy != "wall_time" {
			return fmt.Errorf("exhausted by %q", s.ExhaustedBy)
		}
		return nil
	})
	if _, err := f.cl.Acquire(ctxT(t), Acquire{Agent: "late", Kind: "root", Estimate: 1}, nil); !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("acquire after the wall time: %v", err)
	}
}

func TestWallTimeFailsWaiters(t *testing.T) {
	f := start(t, Limits{Tokens: 100, WallTime: time.Hour})
	f.acquire(t, "a", "", "root", 100)
	p := f.acquireAsync(ctxT(t), Acquire{Agent: "b", Kind: "root", Estimate: 50})
	p.mustQueue(t)
	f.sys.Root.Send(f.cl.PID(), &wallTimeUp{}) // what the wall-time timer sends
	if r := p.wait(t); !errors.Is(r.err, ErrBudgetExhausted) {
		t.Fatalf("acquire waiting when the wall time ran out: %v", r.err)
	}
	if u, _ := f.cl.Usage(ctxT(t), Usage{Agent: "a", Tokens: 1}); u.State != StateExhausted {
		t.Fatalf("usage after the wall time: %+v", u)
	}
}

func TestStopFailsWaitersAndCalls(t *testing.T) {
	sys := newSystem(t)
	pid, err := Spawn(sys.Root, "r", Limits{Tokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	cl := NewClient(sys.Root, pid)
	if _, err := cl.Acquire(ctxT(t), Acquire{Agent: "a", Kind: "root", Estimate: 10}, nil); err != nil {
		t.Fatal(err)
	}
	queued := make(chan Queued, 1)
	done := make(chan error, 1)
	go func() {
		_, err := cl.Acquire(ctxT(t), Acquire{Agent: "b", Kind: "root", Estimate: 5}, func(q Queued) { queued <- q })
		done <- err
	}()
	select {
	case <-queued:
	case err := <-done:
		t.Fatalf("b did not queue: %v", err)
	}
	if err := Stop(sys.Root, pid); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrStopped) {
		t.Fatalf("waiting acquire on stop: %v", err)
	}
	if _, err := cl.Usage(ctxT(t), Usage{Agent: "a", Tokens: 1}); !errors.Is(err, ErrStopped) {
		t.Fatalf("usage after stop: %v", err)
	}
	if _, err := cl.Acquire(ctxT(t), Acquire{Agent: "c", Kind: "root", Estimate: 1}, nil); !errors.Is(err, ErrStopped) {
		t.Fatalf("acquire after stop: %v", err)
	}
}
