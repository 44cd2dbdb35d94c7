package budget

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/troupe-ai/troupe/messages"
)

// acquire validates a request, queues it and serves the queue.
func (a *budgetActor) acquire(c actor.Context, m *Acquire) {
	reply := c.Sender()
	now := time.Now()
	pool, est, err := a.admit(m)
	if err != nil {
		a.answer(c, reply, &Granted{Err: err})
		return
	}
	a.tickets++
	w := &waiter{req: m, reply: reply, ticket: a.tickets, arrived: now, est: est, pool: pool,
		deadline: m.Deadline}
	if w.deadline.IsZero() && a.limits.AcquireTimeout > 0 {
		w.deadline = now.Add(a.limits.AcquireTimeout)
	}
	a.waiters = append(a.waiters, w)
	a.waiting[m.Agent] = w
	a.serve(c)
	if _, still := a.waiting[m.Agent]; !still || w.deadline.IsZero() {
		return
	}
	if !w.deadline.After(now) {
		a.expire(c, w.ticket)
		return
	}
	self, root, ticket := c.Self(), c.ActorSystem().Root, w.ticket
	w.timer = time.AfterFunc(w.deadline.Sub(now), func() { root.Send(self, &acquireExpired{ticket: ticket}) })
}

// admit checks a request and finds the pool it draws from and the amount.
func (a *budgetActor) admit(m *Acquire) (*node, res, error) {
	switch {
	case m.Agent == "":
		return nil, res{}, fmt.Errorf("%w: Acquire.Agent is empty (give the new agent's ID)", ErrInvalidRequest)
	case m.Kind == "":
		return nil, res{}, fmt.Errorf("%w: Acquire.Kind is empty for %s (root, explore, planner, worker...)", ErrInvalidRequest, m.Agent)
	case m.Estimate <= 0:
		return nil, res{}, fmt.Errorf("%w: Acquire.Estimate must be > 0 tokens for %s, got %d", ErrInvalidRequest, m.Agent, m.Estimate)
	case m.EstimateUSD < 0 || math.IsNaN(m.EstimateUSD) || math.IsInf(m.EstimateUSD, 0):
		return nil, res{}, fmt.Errorf("%w: Acquire.EstimateUSD must be >= 0 for %s, got %v", ErrInvalidRequest, m.Agent, m.EstimateUSD)
	}
	if _, dup := a.agents[m.Agent]; dup {
		return nil, res{}, fmt.Errorf("acquire for %s: %w", m.Agent, ErrDuplicateAgent)
	}
	if _, dup := a.waiting[m.Agent]; dup {
		return nil, res{}, fmt.Errorf("acquire for %s (already queued): %w", m.Agent, ErrDuplicateAgent)
	}
	if a.exhaustedBy != "" {
		return nil, res{}, fmt.Errorf("acquire for %s: run over its %s limit: %w", m.Agent, a.exhaustedBy, ErrBudgetExhausted)
	}
	pool := a.pool
	if m.Parent != "" {
		p, ok := a.agents[m.Parent]
		switch {
		case !ok:
			return nil, res{}, fmt.Errorf("acquire for %s: parent %s has no lease: %w", m.Agent, m.Parent, ErrUnknownAgent)
		case !p.live():
			return nil, res{}, fmt.Errorf("acquire for %s: parent %s: %w", m.Agent, m.Parent, ErrReleased)
		}
		pool = p
	}
	est := a.amount(m.Estimate, m.EstimateUSD)
	if err := a.possible(m, pool, est); err != nil {
		return nil, res{}, err
	}
	return pool, est, nil
}

// amount is the resource vector of a token count and its dollars; without
// a dollar limit dollars are not pooled.
func (a *budgetActor) amount(tokens int64, usd float64) res {
	r := res{tok: tokens}
	if !a.usdLimited {
		return r
	}
	if usd > 0 {
		r.usd = toNano(usd)
	} else {
		share := float64(tokens) / float64(a.limits.Tokens) * float64(a.pool.granted.usd)
		r.usd = int64(math.Ceil(share))
	}
	return r
}

// possible reports ErrLimitExceeded when a request could never be served.
func (a *budgetActor) possible(m *Acquire, pool *node, est res) error {
	ceil := pool.ceiling()
	switch {
	case est.tok > ceil.tok:
		return fmt.Errorf("acquire for %s: estimate %d tokens, pool %s can supply at most %d: %w",
			m.Agent, est.tok, poolName(pool), max(0, ceil.tok), ErrLimitExceeded)
	case a.usdLimited && est.usd > ceil.usd:
		return fmt.Errorf("acquire for %s: estimate $%.6f, pool %s can supply at most $%.6f: %w",
			m.Agent, toUSD(est.usd), poolName(pool), toUSD(max(0, ceil.usd)), ErrLimitExceeded)
	}
	if n, ok := a.limits.kindCap(m.Kind); ok && n == 0 {
		return fmt.Errorf("acquire for %s: kind %s is capped at 0 agents (Limits.PerKind): %w", m.Agent, m.Kind, ErrLimitExceeded)
	}
	return nil
}

func poolName(p *node) string {
	if p.parent == nil {
		return "run"
	}
	return p.id
}

// serve grants queued requests in arrival order. A request that cannot be
// served blocks, for every later request, each pool it is short of (its
// parent's tokens, the global slots, its kind's slots); pools it is not
// short of stay open, so an unrelated sub-tree is never held up by it.
func (a *budgetActor) serve(c actor.Context) {
	shortPool := map[*node]bool{}
	shortKind := map[string]bool{}
	shortSlots := false
	kept := a.waiters[:0]
	for _, w := range a.waiters {
		if err := a.stillPossible(w); err != nil {
			a.fail(c, w, err)
			continue
		}
		kind := w.req.Kind
		fits := a.fits(w.pool.available(), w.est)
		slotsFree := a.limits.MaxConcurrent == 0 || a.slots < a.limits.MaxConcurrent
		kindCap, capped := a.limits.kindCap(kind)
		kindFree := !capped || a.kindSlots[kind] < kindCap
		blocked := shortPool[w.pool] || (a.limits.MaxConcurrent > 0 && shortSlots) || (capped && shortKind[kind])
		if fits && slotsFree && kindFree && !blocked {
			a.grant(c, w)
			continue
		}
		shortPool[w.pool] = shortPool[w.pool] || !fits
		shortSlots = shortSlots || !slotsFree
		shortKind[kind] = shortKind[kind] || !kindFree
		kept = append(kept, w)
		if !w.notified {
			w.notified = true
			q := Queued{Agent: w.req.Agent, Ticket: w.ticket, Position: len(kept),
				Reason: messages.BudgetWaitTokens, Pool: poolName(w.pool)}
			if fits && !shortPool[w.pool] {
				q.Reason, q.Pool = messages.BudgetWaitSlots, "slots"
				if !kindFree || (capped && shortKind[kind]) {
					q.Pool = "slots:" + kind
				}
			}
			a.answer(c, w.reply, &q)
		}
	}
	clear(a.waiters[len(kept):])
	a.waiters = kept
}

// fits reports whether est can be carved out of avail.
func (a *budgetActor) fits(avail, est res) bool {
	return avail.tok >= est.tok && (!a.usdLimited || avail.usd >= est.usd)
}

// stillPossible re-checks a queued request against a pool that may have
// ended or shrunk for good since it arrived.
func (a *budgetActor) stillPossible(w *waiter) error {
	if !w.pool.live() {
		return fmt.Errorf("acquire for %s: parent %s: %w", w.req.Agent, w.pool.id, ErrReleased)
	}
	return a.possible(w.req, w.pool, w.est)
}

// grant turns a waiter into a lease.
func (a *budgetActor) grant(c actor.Context, w *waiter) {
	now := time.Now()
	if w.timer != nil {
		w.timer.Stop()
	}
	delete(a.waiting, w.req.Agent)
	a.grants++
	n := &node{id: w.req.Agent, kind: w.req.Kind, children: map[string]*node{}, granted: w.est,
		state: StateOK, ticket: w.ticket, order: a.grants, acquiredAt: now}
	lend(w.pool, n)
	a.agents[n.id] = n
	a.granted = append(a.granted, n)
	a.slots++
	a.kindSlots[n.kind]++
	if w.req.Holder != nil {
		a.bind(c, n, w.req.Holder)
	}
	a.answer(c, w.reply, &Granted{Lease: Lease{Agent: n.id, Parent: w.req.Parent, Kind: n.kind,
		Tokens: w.est.tok, USD: toUSD(w.est.usd), Ticket: w.ticket, Order: n.order, Waited: now.Sub(w.arrived)}})
}

// fail answers a waiter with err; the caller drops it from the queue.
func (a *budgetActor) fail(c actor.Context, w *waiter, err error) {
	if w.timer != nil {
		w.timer.Stop()
	}
	delete(a.waiting, w.req.Agent)
	a.answer(c, w.reply, &Granted{Err: err})
}

// drop removes a waiter from the queue and answers it with err.
func (a *budgetActor) drop(c actor.Context, w *waiter, err error) {
	if i := slices.Index(a.waiters, w); i >= 0 {
		a.waiters = slices.Delete(a.waiters, i, i+1)
	}
	a.fail(c, w, err)
	a.serve(c) // a request behind it may now go first
}

// expire fails a request whose deadline passed, if it still waits.
func (a *budgetActor) expire(c actor.Context, ticket uint64) {
	for _, w := range a.waiters {
		if w.ticket == ticket {
			a.drop(c, w, fmt.Errorf("acquire for %s: waited %v: %w",
				w.req.Agent, time.Since(w.arrived).Round(time.Millisecond), ErrAcquireTimeout))
			return
		}
	}
}

// answer sends msg to an acquirer, if it gave an address to answer.
func (a *budgetActor) answer(c actor.Context, to *actor.PID, msg any) {
	if to != nil {
		c.Send(to, msg)
	}
}
