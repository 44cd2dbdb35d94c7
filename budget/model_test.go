package budget

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// modelAgent is the test's own record of one lease.
type modelAgent struct {
	id, parent string
	holder     *actor.PID
	live       bool
	used       int64
}

// model mirrors what the ledger must say, computed independently.
type model struct {
	agents map[string]*modelAgent
	order  []string
}

func (m *model) live() []*modelAgent {
	var out []*modelAgent
	for _, id := range m.order {
		if a := m.agents[id]; a.live {
			out = append(out, a)
		}
	}
	return out
}

// end marks a and its live descendants released.
func (m *model) end(a *modelAgent) {
	a.live = false
	for _, id := range m.order {
		if c := m.agents[id]; c.live && c.parent == a.id {
			m.end(c)
		}
	}
}

// compare checks the snapshot against the model.
func (m *model) compare(f *fixture, t *testing.T) error {
	s := f.snap(t)
	var total int64
	live := 0
	for _, a := range m.agents {
		total += a.used
		if a.live {
			live++
		}
	}
	if s.Used.Tokens != total || s.Slots != live || len(s.Agents) != len(m.agents) {
		return fmt.Errorf("run: used %d slots %d agents %d; model %d %d %d", s.Used.Tokens, s.Slots, len(s.Agents), total, live, len(m.agents))
	}
	for _, line := range s.Agents {
		a := m.agents[line.Agent]
		if line.Used.Tokens != a.used || (line.State == StateReleased) == a.live || line.Parent != a.parent {
			return fmt.Errorf("%s: snapshot %+v, model %+v", line.Agent, line, *a)
		}
	}
	return nil
}

// TestRandomOperationsMatchModel drives one actor with a long random (but
// seeded) sequence of acquires, usage, late usage, top-ups, releases and
// holder deaths, and compares the ledger with an independent model after
// every step, while the actor checks its own invariants after every message.
func TestRandomOperationsMatchModel(t *testing.T) {
	f := start(t, Limits{Tokens: 1_000_000, USD: 100, MaxConcurrent: 20, PerKind: map[string]int{"explore": 5}})
	m := &model{agents: map[string]*modelAgent{}}
	rng := rand.New(rand.NewPCG(2026, 11))
	kinds := []string{"root", "explore", "worker"}
	ctx := ctxT(t)
	outcomes := map[string]int{}
	for step := range 1000 {
		live := m.live()
		switch op := rng.IntN(10); {
		case op < 3 || len(live) == 0: // acquire; a past deadline means "now or never"
			req := Acquire{Agent: fmt.Sprint("m", step), Kind: kinds[rng.IntN(3)],
				Estimate: 1 + rng.Int64N(20_000), Deadline: time.Now(), Holder: holder(f.sys)}
			if len(live) > 0 && rng.IntN(3) > 0 {
				req.Parent = live[rng.IntN(len(live))].id
			}
			_, err := f.cl.Acquire(ctx, req, nil)
			switch {
			case err == nil:
				outcomes["granted"]++
				m.agents[req.Agent] = &modelAgent{id: req.Agent, parent: req.Parent, holder: req.Holder, live: true}
				m.order = append(m.order, req.Agent)
			case errors.Is(err, ErrAcquireTimeout):
				outcomes["no room now"]++
			case errors.Is(err, ErrLimitExceeded):
				outcomes["over the pool"]++
			default:
				t.Fatalf("step %d: acquire: %v", step, err)
			}
		case op < 6: // usage, sometimes on an ended lease
			a := m.agents[m.order[rng.IntN(len(m.order))]]
			tok := rng.Int64N(3000)
			if _, err := f.cl.Usage(ctx, Usage{Agent: a.id, Tokens: tok, Cost: float64(tok) * 1e-5, TopUp: rng.Int64N(2) * tok}); err != nil {
				t.Fatalf("step %d: usage: %v", step, err)
			}
			a.used += tok
			if !a.live {
				outcomes["late usage"]++
			}
		case op < 7:
			a := live[rng.IntN(len(live))]
			if _, err := f.cl.TopUp(ctx, TopUp{Agent: a.id, Want: 1 + rng.Int64N(5000)}); err != nil {
				t.Fatalf("step %d: top-up: %v", step, err)
			}
		case op < 9:
			a := live[rng.IntN(len(live))]
			extra := rng.Int64N(2) * rng.Int64N(500)
			r, err := f.cl.Release(ctx, Release{Agent: a.id, Used: a.used + extra})
			if err != nil || r.Already {
				t.Fatalf("step %d: release %s: %+v, %v", step, a.id, r, err)
			}
			a.used += extra
			m.end(a)
		default: // the holder dies
			a := live[rng.IntN(len(live))]
			f.sys.Root.StopFuture(a.holder).Wait()
			m.end(a)
			outcomes["died"]++
			checkFor(t, waitLong, time.Millisecond, func() error {
				if line := agentLine(t, f.snap(t), a.id); line.State != StateReleased {
					return fmt.Errorf("%s still %s", a.id, line.State)
				}
				return nil
			})
		}
		if err := m.compare(f, t); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	f.ok(t)
	t.Logf("outcomes: %v", outcomes)
	for _, a := range m.live() {
		if a.live {
			f.release(t, a.id, 0)
			m.end(a)
		}
	}
	s := f.snap(t)
	if s.Reserved != 0 || s.Slots != 0 || s.Available != 1_000_000-s.Used.Tokens || s.Exhausted {
		t.Fatalf("after releasing everything: %+v", s)
	}
	if err := m.compare(f, t); err != nil {
		t.Fatal(err)
	}
}
