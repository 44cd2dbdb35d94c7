package budget

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/messages"
)

// waitLong bounds every wait in these tests; it is generous on purpose and
// is never reached when the code works.
const waitLong = 20 * time.Second

// newSystem starts an actor system whose protoactor logging is silenced and
// shuts it down at the end of the test.
func newSystem(t testing.TB) *actor.ActorSystem {
	t.Helper()
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(sys.Shutdown)
	return sys
}

// fixture is a running budget actor with the invariant check switched on.
type fixture struct {
	sys *actor.ActorSystem
	cl  *Client

	mu     sync.Mutex
	broken []error
}

// start spawns a budget actor for limits; a broken ledger invariant fails
// the test at its end (and at every f.ok call).
func start(t testing.TB, limits Limits) *fixture {
	t.Helper()
	return startWith(t, limits, true)
}

// startWith is start with the invariant check optional: benchmarks leave
// it off, as it walks the whole ledger after every message.
func startWith(t testing.TB, limits Limits, check bool) *fixture {
	t.Helper()
	f := &fixture{sys: newSystem(t)}
	var opts []Option
	if check {
		opts = append(opts, withInvariantCheck(func(err error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.broken = append(f.broken, err)
		}))
	}
	pid, err := Spawn(f.sys.Root, "run1", limits, opts...)
	if err != nil {
		t.Fatalf("Spawn: %v", err)
	}
	f.cl = NewClient(f.sys.Root, pid)
	t.Cleanup(func() {
		if err := Stop(f.sys.Root, pid); err != nil {
			t.Errorf("Stop: %v", err)
		}
		f.ok(t)
	})
	return f
}

// ok fails the test if the actor reported a broken invariant.
func (f *fixture) ok(t testing.TB) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, err := range f.broken {
		t.Errorf("ledger invariant broken: %v", err)
	}
	f.broken = nil
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	t.Cleanup(cancel)
	return ctx
}

// snap takes a snapshot or fails the test.
func (f *fixture) snap(t testing.TB) messages.BudgetSnapshot {
	t.Helper()
	s, err := f.cl.Snapshot(ctxT(t))
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return s
}

// acquire acquires a lease or fails the test.
func (f *fixture) acquire(t testing.TB, agent, parent, kind string, est int64) Lease {
	t.Helper()
	l, err := f.cl.Acquire(ctxT(t), Acquire{Agent: agent, Parent: parent, Kind: kind, Estimate: est}, nil)
	if err != nil {
		t.Fatalf("Acquire %s: %v", agent, err)
	}
	return l
}

// release releases a lease or fails the test.
func (f *fixture) release(t testing.TB, agent string, used int64) Released {
	t.Helper()
	r, err := f.cl.Release(ctxT(t), Release{Agent: agent, Used: used})
	if err != nil {
		t.Fatalf("Release %s: %v", agent, err)
	}
	return r
}

// agentLine finds an agent in a snapshot.
func agentLine(t testing.TB, s messages.BudgetSnapshot, agent string) messages.BudgetAgent {
	t.Helper()
	for _, a := range s.Agents {
		if a.Agent == agent {
			return a
		}
	}
	t.Fatalf("agent %s not in snapshot", agent)
	return messages.BudgetAgent{}
}

// checkFor polls fn every interval until it returns nil or total passes,
// then fails with fn's last error.
var checkFor = testfiles.PollEvery

// pending is an Acquire running in a goroutine.
type pending struct {
	queued chan Queued
	done   chan result
}

type result struct {
	lease Lease
	err   error
}

// acquireAsync starts an Acquire and returns once it is queued or done.
func (f *fixture) acquireAsync(ctx context.Context, req Acquire) *pending {
	p := &pending{queued: make(chan Queued, 1), done: make(chan result, 1)}
	go func() {
		l, err := f.cl.Acquire(ctx, req, func(q Queued) { p.queued <- q })
		p.done <- result{l, err}
	}()
	return p
}

// mustQueue waits for the queued notice of p.
func (p *pending) mustQueue(t testing.TB) Queued {
	t.Helper()
	select {
	case q := <-p.queued:
		return q
	case r := <-p.done:
		t.Fatalf("acquire finished instead of queueing: %+v", r)
	case <-time.After(waitLong):
		t.Fatal("acquire neither queued nor finished")
	}
	return Queued{}
}

// wait waits for p's result.
func (p *pending) wait(t testing.TB) result {
	t.Helper()
	select {
	case r := <-p.done:
		return r
	case <-time.After(waitLong):
		t.Fatal("acquire did not finish")
	}
	return result{}
}

// holder spawns an idle actor to hold leases.
func holder(sys *actor.ActorSystem) *actor.PID {
	return sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
}
