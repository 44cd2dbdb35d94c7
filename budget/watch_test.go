package budget

import (
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// released reports whether every named agent's lease is back.
func (f *fixture) released(t testing.TB, agents ...string) func() error {
	return func() error {
		s, err := f.cl.Snapshot(ctxT(t))
		if err != nil {
			return err
		}
		for _, a := range s.Agents {
			for _, want := range agents {
				if a.Agent == want && (a.State != StateReleased || a.Reserved != 0) {
					return fmt.Errorf("%s: state %s reserved %d", a.Agent, a.State, a.Reserved)
				}
			}
		}
		return nil
	}
}

func TestHolderDeathReturnsLeaseAndDescendants(t *testing.T) {
	f := start(t, Limits{Tokens: 1000, MaxConcurrent: 5})
	h1, h2 := holder(f.sys), holder(f.sys)
	ctx := ctxT(t)
	for _, req := range []Acquire{
		{Agent: "root", Kind: "root", Estimate: 500, Holder: h1},
		{Agent: "w", Parent: "root", Kind: "worker", Estimate: 200, Holder: h2},
		{Agent: "e", Parent: "w", Kind: "explore", Estimate: 50},
	} {
		if _, err := f.cl.Acquire(ctx, req, nil); err != nil {
			t.Fatal(err)
		}
	}
	f.cl.Usage(ctx, Usage{Agent: "e", Tokens: 30})

	if err := f.sys.Root.StopFuture(h1).Wait(); err != nil {
		t.Fatal(err)
	}
	checkFor(t, waitLong, 5*time.Millisecond, f.released(t, "root", "w", "e"))
	s := f.snap(t)
	if s.Slots != 0 || s.Reserved != 0 || s.Available != 970 {
		t.Fatalf("after the root's holder died: %+v", s)
	}
	// The agent's own Release comes after: it still learns what its lease
	// gave back (minus the 5 tokens it had not reported), once.
	rel := f.release(t, "e", 35)
	if rel.Already || rel.Returned != 15 || rel.Used.Tokens != 35 {
		t.Fatalf("first release after the lease ended with its ancestor = %+v", rel)
	}
	if rel = f.release(t, "e", 35); !rel.Already || rel.Returned != 0 {
		t.Fatalf("second release = %+v", rel)
	}
	if s := f.snap(t); s.Available != 965 || s.Used.Tokens != 35 {
		t.Fatalf("run after the late release: available %d used %d", s.Available, s.Used.Tokens)
	}
	// w's holder dies later: its lease is already back, nothing changes.
	if err := f.sys.Root.StopFuture(h2).Wait(); err != nil {
		t.Fatal(err)
	}
	if s2 := f.snap(t); s2.Available != 965 || s2.Slots != 0 {
		t.Fatalf("late death of a released holder changed the ledger: %+v", s2)
	}
}

// A lease is tied to the holder named in its Acquire: the holder's death
// returns it and every other lease that actor holds, and leaves a lease
// without a holder alone.
func TestHolderOwnsItsLeases(t *testing.T) {
	f := start(t, Limits{Tokens: 1000})
	ctx := ctxT(t)
	owner := holder(f.sys)
	for _, req := range []Acquire{
		{Agent: "w1", Kind: "worker", Estimate: 100, Holder: owner},
		{Agent: "w2", Kind: "worker", Estimate: 100, Holder: owner},
		{Agent: "free", Kind: "worker", Estimate: 100},
	} {
		if _, err := f.cl.Acquire(ctx, req, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.sys.Root.StopFuture(owner).Wait(); err != nil {
		t.Fatal(err)
	}
	checkFor(t, waitLong, 5*time.Millisecond, f.released(t, "w1", "w2"))
	if line := agentLine(t, f.snap(t), "free"); line.State != StateOK {
		t.Fatalf("a lease without a holder was released: %+v", line)
	}
}

func TestHolderDeadBeforeGrant(t *testing.T) {
	f := start(t, Limits{Tokens: 1000})
	h := holder(f.sys)
	f.sys.Root.StopFuture(h).Wait()
	if _, err := f.cl.Acquire(ctxT(t), Acquire{Agent: "a", Kind: "root", Estimate: 10, Holder: h}, nil); err != nil {
		t.Fatal(err)
	}
	checkFor(t, waitLong, 5*time.Millisecond, f.released(t, "a"))
}

// TestActorProtocol drives the budget actor from another actor, as agent
// actors do: Request, then the replies arrive in the agent's Receive.
func TestActorProtocol(t *testing.T) {
	f := start(t, Limits{Tokens: 100})
	f.acquire(t, "a", "", "root", 100)
	got := make(chan any, 8)
	agent := f.sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *actor.Started:
			c.Request(f.cl.PID(), &Acquire{Agent: "b", Kind: "root", Estimate: 50, Holder: c.Self()})
		case *Granted:
			got <- m
			c.Request(f.cl.PID(), &Usage{Agent: "b", Tokens: 20})
		case *Queued, *UsageReply:
			got <- m
		}
	}))
	next := func() any {
		select {
		case m := <-got:
			return m
		case <-time.After(waitLong):
			t.Fatal("no reply reached the agent actor")
		}
		return nil
	}
	if q, ok := next().(*Queued); !ok || q.Agent != "b" || q.Position != 1 {
		t.Fatalf("first reply %+v, want Queued", q)
	}
	f.release(t, "a", 0)
	if g, ok := next().(*Granted); !ok || g.Err != nil || g.Lease.Tokens != 50 {
		t.Fatalf("second reply %+v, want a grant of 50", g)
	}
	if u, ok := next().(*UsageReply); !ok || u.State != StateOK || u.Remaining != 30 {
		t.Fatalf("third reply %+v, want ok with 30 left", u)
	}
	f.sys.Root.StopFuture(agent).Wait()
	checkFor(t, waitLong, 5*time.Millisecond, f.released(t, "b"))
}
