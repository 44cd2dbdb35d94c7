package budget

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// registry is the test's view of live agents, for picking random parents.
type registry struct {
	mu   sync.Mutex
	live []liveAgent
}

type liveAgent struct {
	id  string
	est int64
}

func (r *registry) add(a liveAgent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live = append(r.live, a)
}

func (r *registry) remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live = slices.DeleteFunc(r.live, func(a liveAgent) bool { return a.id == id })
}

// pick returns a random live agent, or ok false for "start a root".
func (r *registry) pick(rng *rand.Rand) (liveAgent, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.live) == 0 || rng.IntN(10) < 3 {
		return liveAgent{}, false
	}
	return r.live[rng.IntN(len(r.live))], true
}

// checkLimits verifies that a snapshot's live reservations respect every
// limit: grants within their pools, slots within their caps.
func checkLimits(s messages.BudgetSnapshot, l Limits) error {
	type sums struct {
		tok int64
		usd float64
	}
	children := map[string]sums{}
	granted := map[string]sums{"": {l.Tokens, l.USD}}
	live, kinds := 0, map[string]int{}
	for _, a := range s.Agents {
		if a.State == StateReleased {
			continue
		}
		live++
		kinds[a.Kind]++
		granted[a.Agent] = sums{a.Granted, a.GrantedUSD}
		c := children[a.Parent]
		c.tok += a.Granted
		c.usd += a.GrantedUSD
		children[a.Parent] = c
	}
	for parent, c := range children {
		g, ok := granted[parent]
		if !ok {
			return fmt.Errorf("live lease under released parent %s", parent)
		}
		if c.tok > g.tok || c.usd > g.usd+1e-9 {
			return fmt.Errorf("pool %q: children hold %d tokens $%.6f of %d $%.6f", parent, c.tok, c.usd, g.tok, g.usd)
		}
	}
	if l.MaxConcurrent > 0 && live > l.MaxConcurrent {
		return fmt.Errorf("%d live leases over MaxConcurrent %d", live, l.MaxConcurrent)
	}
	for kind, n := range kinds {
		if c, ok := l.PerKind[kind]; ok && n > c {
			return fmt.Errorf("%d live %s leases over the cap %d", n, kind, c)
		}
	}
	return nil
}

// TestStressConcurrentAgents runs hundreds of agents at once: roots and
// children of random live parents acquire, report usage, top up, release
// or die without releasing. The ledger is checked after every message
// inside the actor and by snapshots from outside while it runs; at the end
// nothing may be left reserved, and grants of one (pool, kind) must have
// come in arrival order.
func TestStressConcurrentAgents(t *testing.T) {
	const agents = 400
	limits := Limits{Tokens: 400_000, USD: 20, MaxConcurrent: 32,
		PerKind: map[string]int{"explore": 8, "worker": 4, "planner": 6}}
	f := start(t, limits)
	kinds := []string{"root", "explore", "worker", "planner"}
	reg := &registry{}
	var (
		mu      sync.Mutex
		leases  []Lease
		queued  atomic.Int64
		granted atomic.Int64
		failed  = map[string]int{}
	)
	stop := make(chan struct{})
	monitorErr := make(chan error, 1)
	go func() { // watch limits from outside while agents run
		var err error
		for err == nil {
			select {
			case <-stop:
				monitorErr <- nil
				return
			default:
			}
			var s messages.BudgetSnapshot
			if s, err = f.cl.Snapshot(context.Background()); err == nil {
				err = checkLimits(s, limits)
			}
		}
		monitorErr <- err
	}()

	var wg sync.WaitGroup
	for i := range agents {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(42, uint64(i)))
			id := fmt.Sprintf("a%03d", i)
			kind := kinds[rng.IntN(len(kinds))]
			est := 2000 + rng.Int64N(28_000)
			req := Acquire{Agent: id, Kind: kind, Estimate: est, Holder: holder(f.sys)}
			if p, ok := reg.pick(rng); ok {
				req.Parent, req.Estimate = p.id, 1+rng.Int64N(p.est/3)
			}
			if rng.IntN(5) == 0 {
				req.Deadline = time.Now().Add(time.Duration(1+rng.IntN(20)) * time.Millisecond)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if rng.IntN(20) == 0 {
				cancel() // some give up at once
			}
			lease, err := f.cl.Acquire(ctx, req, func(Queued) { queued.Add(1) })
			if err != nil {
				allowed := []error{ErrAcquireTimeout, ErrReleased, ErrUnknownAgent, ErrLimitExceeded, context.Canceled}
				i := slices.IndexFunc(allowed, func(e error) bool { return errors.Is(err, e) })
				if i < 0 {
					t.Errorf("%s: unexpected acquire error %v", id, err)
				} else {
					mu.Lock()
					failed[allowed[i].Error()]++
					mu.Unlock()
				}
				f.sys.Root.Stop(req.Holder)
				return
			}
			granted.Add(1)
			mu.Lock()
			leases = append(leases, lease)
			mu.Unlock()
			reg.add(liveAgent{id, lease.Tokens})
			greedy := rng.IntN(20) == 0
			var used int64
			for range 1 + rng.IntN(5) {
				tok := rng.Int64N(lease.Tokens/100 + 1)
				if greedy {
					tok = rng.Int64N(lease.Tokens/3 + 1)
				}
				u, err := f.cl.Usage(ctx, Usage{Agent: id, Tokens: tok, Cost: float64(tok) * 1e-5,
					ToolCalls: rng.Int64N(3), TopUp: tok})
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("%s: usage: %v", id, err)
				}
				used += tok
				if u.State != StateOK {
					break // exhausted, or an ancestor ended and took this lease along
				}
			}
			reg.remove(id)
			if rng.IntN(10) == 0 { // die without releasing
				f.sys.Root.Stop(req.Holder)
				return
			}
			if _, err := f.cl.Release(context.Background(), Release{Agent: id, Used: used}); err != nil {
				t.Errorf("%s: release: %v", id, err)
			}
			f.sys.Root.Stop(req.Holder)
		})
	}
	wg.Wait()
	close(stop)
	if err := <-monitorErr; err != nil {
		t.Errorf("limits broken while agents ran: %v", err)
	}
	f.ok(t)

	// Every lease comes back, including those of agents that died.
	checkFor(t, waitLong, 10*time.Millisecond, func() error {
		s, err := f.cl.Snapshot(context.Background())
		switch {
		case err != nil:
			return err
		case s.Slots != 0 || s.Reserved != 0 || s.Waiting != 0 || len(s.KindSlots) != 0:
			return fmt.Errorf("slots %d reserved %d waiting %d kinds %v", s.Slots, s.Reserved, s.Waiting, s.KindSlots)
		case s.Available != limits.Tokens-s.Used.Tokens:
			return fmt.Errorf("available %d, want %d - %d", s.Available, limits.Tokens, s.Used.Tokens)
		}
		for _, a := range s.Agents {
			if a.State != StateReleased {
				return fmt.Errorf("%s still %s", a.Agent, a.State)
			}
		}
		return nil
	})
	s := f.snap(t)
	if s.Exhausted {
		t.Fatalf("the stress run exhausted its budget (used %d); the test is meant to stay within it", s.Used.Tokens)
	}
	t.Logf("%d agents: %d granted, %d queued notices, %d tokens used, $%.4f; failed acquires: %v",
		agents, granted.Load(), queued.Load(), s.Used.Tokens, s.Used.CostUSD, failed)
	if queued.Load() == 0 {
		t.Error("no acquire ever waited: the test did not exercise the queue")
	}
	checkFIFO(t, leases)
}

// checkFIFO verifies that leases drawing on the same pools (the same
// parent and kind) were granted in arrival order.
func checkFIFO(t *testing.T, leases []Lease) {
	t.Helper()
	groups := map[[2]string][]Lease{}
	for _, l := range leases {
		k := [2]string{l.Parent, l.Kind}
		groups[k] = append(groups[k], l)
	}
	for k, g := range groups {
		slices.SortFunc(g, func(a, b Lease) int { return cmp.Compare(a.Order, b.Order) })
		for i := 1; i < len(g); i++ {
			if g[i].Ticket < g[i-1].Ticket {
				t.Errorf("pool %v: %s (ticket %d) granted before %s (ticket %d) though it came later",
					k, g[i-1].Agent, g[i-1].Ticket, g[i].Agent, g[i].Ticket)
			}
		}
	}
}
