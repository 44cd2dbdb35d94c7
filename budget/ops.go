package budget

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// lookup finds an agent's lease.
func (a *budgetActor) lookup(op, agent string) (*node, error) {
	if agent == "" {
		return nil, fmt.Errorf("%w: %s.Agent is empty", ErrInvalidRequest, op)
	}
	n, ok := a.agents[agent]
	if !ok {
		return nil, fmt.Errorf("%s for %s: %w", op, agent, ErrUnknownAgent)
	}
	return n, nil
}

// usage charges a lease and says whether the agent may go on.
func (a *budgetActor) usage(c actor.Context, m *Usage) *UsageReply {
	n, err := a.lookup("Usage", m.Agent)
	if err != nil {
		return &UsageReply{Err: err}
	}
	if m.Tokens < 0 || m.ToolCalls < 0 || m.TopUp < 0 || m.Cost < 0 || math.IsNaN(m.Cost) || math.IsInf(m.Cost, 0) {
		return &UsageReply{Err: fmt.Errorf("%w: Usage for %s: Tokens, Cost, ToolCalls and TopUp must be >= 0", ErrInvalidRequest, m.Agent)}
	}
	s := spend{tok: m.Tokens, usd: toNano(m.Cost), calls: m.ToolCalls}
	if !n.live() {
		// Spent after the agent ended (a late report): book it, nothing to answer but the state.
		a.chargeEnded(n, s)
		a.checkLimits(c)
		return a.stateOf(n, 0)
	}
	charge(n, s)
	a.checkLimits(c)
	var topped int64
	if a.exhaustedBy == "" && m.TopUp > 0 && a.usedUp(n) {
		topped = a.grow(n, m.TopUp, 0)
	}
	a.restate(n)
	return a.stateOf(n, topped)
}

// topUp grows a lease from its parent's pool, at once or not at all.
func (a *budgetActor) topUp(c actor.Context, m *TopUp) *UsageReply {
	n, err := a.lookup("TopUp", m.Agent)
	if err != nil {
		return &UsageReply{Err: err}
	}
	if m.Want <= 0 || m.WantUSD < 0 || math.IsNaN(m.WantUSD) || math.IsInf(m.WantUSD, 0) {
		return &UsageReply{Err: fmt.Errorf("%w: TopUp.Want must be > 0 tokens for %s, got %d", ErrInvalidRequest, m.Agent, m.Want)}
	}
	if !n.live() {
		r := a.stateOf(n, 0)
		r.Err = fmt.Errorf("top-up for %s: %w", m.Agent, ErrReleased)
		return r
	}
	var topped int64
	if a.exhaustedBy == "" {
		topped = a.grow(n, m.Want, m.WantUSD)
	}
	a.restate(n)
	return a.stateOf(n, topped)
}

// grow moves up to want tokens (and their dollars) from n's parent's pool
// into n's grant, leaving what queued acquires of that pool wait for. It
// returns the tokens granted.
func (a *budgetActor) grow(n *node, want int64, wantUSD float64) int64 {
	wanted := a.amount(want, wantUSD)
	free := n.parent.available().sub(a.demand(n.parent))
	more := res{tok: min(wanted.tok, max(0, free.tok))}
	if a.usdLimited {
		more.usd = min(wanted.usd, max(0, free.usd))
	}
	if more == (res{}) {
		return 0
	}
	grow(n, more)
	return more.tok
}

// demand is what the requests queued on pool p wait for.
func (a *budgetActor) demand(p *node) res {
	var d res
	for _, w := range a.waiters {
		if w.pool == p {
			d = d.add(w.est)
		}
	}
	return d
}

// usedUp reports whether a lease has nothing left for its own use.
func (a *budgetActor) usedUp(n *node) bool {
	av := n.available()
	return av.tok <= 0 || (a.usdLimited && av.usd <= 0)
}

// restate sets a live lease's state from its pool and the run's limits.
func (a *budgetActor) restate(n *node) {
	if !n.live() {
		return
	}
	if a.exhaustedBy != "" || a.usedUp(n) {
		n.state = StateExhausted
	} else {
		n.state = StateOK
	}
}

func (a *budgetActor) stateOf(n *node, topped int64) *UsageReply {
	r := &UsageReply{State: n.state, Remaining: n.available().tok, Used: n.own.tok,
		Granted: n.granted.tok, ToppedUp: topped}
	if !n.live() {
		r.Remaining = 0
	}
	for _, k := range n.children {
		r.Lent += k.footprint().tok
	}
	return r
}

// chargeEnded books spending reported after a lease ended: the lease's
// totals, its ancestors' subtrees and, for good, the nearest live pool.
func (a *budgetActor) chargeEnded(n *node, s spend) {
	r := res{s.tok, s.usd}
	n.own.add(s)
	for x := n; x != nil; x = x.parent {
		x.subtree.add(s)
	}
	x := n
	for ; x.parent != nil && !x.live(); x = x.parent {
		x.consumed = x.consumed.add(r)
		x.need = x.need.add(r)
	}
	x.consumed = x.consumed.add(r)
	adjust(x, r)
}

// checkLimits marks the run exhausted when a run-wide limit is reached.
func (a *budgetActor) checkLimits(c actor.Context) {
	if a.exhaustedBy != "" {
		return
	}
	total := a.pool.subtree
	switch {
	case total.tok >= a.limits.Tokens:
		a.exhaust(c, "tokens")
	case a.usdLimited && total.usd >= a.pool.granted.usd:
		a.exhaust(c, "usd")
	case a.limits.ToolCalls > 0 && total.calls >= a.limits.ToolCalls:
		a.exhaust(c, "tool_calls")
	}
}

// exhaust ends the run's budget: every lease is exhausted, every queued
// acquire fails.
func (a *budgetActor) exhaust(c actor.Context, by string) {
	if a.exhaustedBy != "" {
		return
	}
	a.exhaustedBy = by
	a.opts.log.Info().Str("run", a.run).Str("limit", by).Msg("run budget exhausted")
	for _, n := range a.granted {
		a.restate(n)
	}
	for _, w := range a.waiters {
		a.fail(c, w, fmt.Errorf("acquire for %s: run over its %s limit: %w", w.req.Agent, by, ErrBudgetExhausted))
	}
	a.waiters = nil
}

// release ends a lease (and its live descendants'), or withdraws a queued
// acquire.
func (a *budgetActor) release(c actor.Context, m *Release) *Released {
	if w, queued := a.waiting[m.Agent]; queued {
		a.drop(c, w, fmt.Errorf("acquire for %s: %w", m.Agent, ErrWithdrawn))
		return &Released{Agent: m.Agent}
	}
	n, err := a.lookup("Release", m.Agent)
	if err != nil {
		return &Released{Agent: m.Agent, Err: err}
	}
	if m.Used < 0 {
		return &Released{Agent: m.Agent, Err: fmt.Errorf("%w: Release.Used must be >= 0 for %s, got %d", ErrInvalidRequest, m.Agent, m.Used)}
	}
	already := n.explicit
	n.explicit = true
	if extra := m.Used - n.own.tok; extra > 0 {
		if n.live() {
			charge(n, spend{tok: extra})
		} else {
			a.chargeEnded(n, spend{tok: extra})
			n.returned = max(0, n.returned-extra)
		}
		a.checkLimits(c)
	}
	if n.live() {
		a.releaseTree(c, n, time.Now())
		a.serve(c)
	}
	r := &Released{Agent: n.id, Used: n.own.wire(), Already: already}
	if !already {
		r.Returned = n.returned
	}
	return r
}

// releaseTree releases n's live descendants, deepest first, then n.
func (a *budgetActor) releaseTree(c actor.Context, n *node, now time.Time) {
	kids := make([]*node, 0, len(n.children))
	for _, k := range n.children {
		kids = append(kids, k)
	}
	slices.SortFunc(kids, func(x, y *node) int { return cmp.Compare(y.order, x.order) })
	for _, k := range kids {
		a.releaseTree(c, k, now)
	}
	n.returned = settle(n, now)
	a.slots--
	a.kindSlots[n.kind]--
	if a.kindSlots[n.kind] == 0 {
		delete(a.kindSlots, n.kind)
	}
	a.unbind(c, n)
}

func pidKey(p *actor.PID) string { return p.Address + "/" + p.Id }

// bind records holder as the owner of n's lease and watches it.
func (a *budgetActor) bind(c actor.Context, n *node, holder *actor.PID) {
	key := pidKey(holder)
	set := a.holders[key]
	if set == nil {
		set = map[string]*node{}
		a.holders[key] = set
		c.Watch(holder)
	}
	set[n.id] = n
	n.holder = holder
}

// unbind forgets n's holder, and stops watching it when it holds nothing.
func (a *budgetActor) unbind(c actor.Context, n *node) {
	if n.holder == nil {
		return
	}
	key := pidKey(n.holder)
	if set := a.holders[key]; set != nil {
		delete(set, n.id)
		if len(set) == 0 {
			delete(a.holders, key)
			c.Unwatch(n.holder)
		}
	}
	n.holder = nil
}

// holderTerminated releases every lease the dead actor held, with its
// descendants.
func (a *budgetActor) holderTerminated(c actor.Context, who *actor.PID) {
	if who == nil {
		return
	}
	set := a.holders[pidKey(who)]
	if len(set) == 0 {
		return
	}
	leases := make([]*node, 0, len(set))
	for _, n := range set {
		leases = append(leases, n)
	}
	slices.SortFunc(leases, func(x, y *node) int { return cmp.Compare(y.order, x.order) })
	now := time.Now()
	for _, n := range leases {
		if n.live() {
			a.opts.log.Debug().Str("run", a.run).Str("agent", n.id).Msg("lease holder terminated; releasing")
			a.releaseTree(c, n, now)
		}
	}
	a.serve(c)
}
