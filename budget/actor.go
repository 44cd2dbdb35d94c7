package budget

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// Option configures the budget actor.
type Option func(*options)

type options struct {
	log   zerolog.Logger
	check func(error) // test hook: called with the first broken invariant after each message
}

// WithLogger sets the logger of the actor (default zerolog.Nop()).
func WithLogger(l zerolog.Logger) Option { return func(o *options) { o.log = l } }

// withInvariantCheck makes the actor verify its ledger after every message
// and report a broken invariant to fn (tests only; it costs O(agents)).
func withInvariantCheck(fn func(error)) Option { return func(o *options) { o.check = fn } }

// Spawn starts the budget actor of one run under root, named
// "budget-<run>". It fails on invalid limits or when the run already has a
// budget actor in this actor system.
func Spawn(root *actor.RootContext, run string, limits Limits, opts ...Option) (*actor.PID, error) {
	if run == "" {
		return nil, fmt.Errorf("%w: run ID is empty", ErrInvalidRequest)
	}
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	o := options{log: zerolog.Nop()}
	for _, opt := range opts {
		opt(&o)
	}
	a := newBudgetActor(run, limits, o)
	// The producer returns the same instance on every (re)start, so a
	// supervisor restart after an unexpected panic keeps the ledger instead
	// of forgetting every lease.
	props := actor.PropsFromProducer(func() actor.Actor { return a })
	pid, err := root.SpawnNamed(props, "budget-"+run)
	if err != nil {
		return nil, fmt.Errorf("spawn budget actor for run %s: %w", run, err)
	}
	return pid, nil
}

// Stop stops the budget actor after it has handled the messages already in
// its mailbox. Acquires still waiting fail with ErrStopped.
func Stop(root *actor.RootContext, pid *actor.PID) error {
	if err := root.PoisonFuture(pid).Wait(); err != nil {
		return fmt.Errorf("stop budget actor %s: %w", pid.Id, err)
	}
	return nil
}

// budgetActor owns the ledger of one run. Every field is touched only on
// the actor's goroutine.
type budgetActor struct {
	run        string
	limits     Limits
	usdLimited bool
	opts       options
	started    time.Time

	pool      *node            // the run's own pool
	agents    map[string]*node // every lease ever granted
	granted   []*node          // the same, in grant order
	holders   map[string]map[string]*node
	slots     int
	kindSlots map[string]int

	waiters []*waiter          // queued acquires, in arrival order
	waiting map[string]*waiter // the same, by agent

	tickets, grants uint64
	exhaustedBy     string
	wallTimer       *time.Timer
}

// waiter is a queued acquire.
type waiter struct {
	req      *Acquire
	reply    *actor.PID
	ticket   uint64
	arrived  time.Time
	deadline time.Time
	est      res
	pool     *node
	timer    *time.Timer
	notified bool
}

// Internal messages the actor sends itself from timers.
type (
	acquireExpired struct{ ticket uint64 }
	wallTimeUp     struct{}
)

func newBudgetActor(run string, limits Limits, o options) *budgetActor {
	a := &budgetActor{run: run, limits: limits, usdLimited: limits.USD > 0, opts: o,
		started: time.Now(), agents: map[string]*node{}, holders: map[string]map[string]*node{},
		kindSlots: map[string]int{}, waiting: map[string]*waiter{}}
	a.pool = &node{id: "", children: map[string]*node{}, state: StateOK,
		granted: res{tok: limits.Tokens}, acquiredAt: a.started}
	if a.usdLimited {
		a.pool.granted.usd = toNano(limits.USD)
	}
	return a
}

// Receive handles one message; it never blocks.
func (a *budgetActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.startWallClock(c)
		return
	case *actor.Stopping:
		a.shutdown(c)
		return
	case *actor.Restarting:
		a.opts.log.Error().Str("run", a.run).Msg("budget actor restarting after a panic; the message that caused it was dropped")
		return
	case *actor.Terminated:
		a.holderTerminated(c, m.Who)
	case *Acquire:
		a.acquire(c, m)
	case *acquireExpired:
		a.expire(c, m.ticket)
	case *Usage:
		c.Respond(a.usage(c, m))
	case *TopUp:
		c.Respond(a.topUp(c, m))
	case *Release:
		c.Respond(a.release(c, m))
	case *GetSnapshot:
		s := a.snapshot()
		c.Respond(&s)
	case *wallTimeUp:
		a.exhaust(c, "wall_time")
	default:
		return
	}
	if a.opts.check != nil {
		if err := a.checkInvariants(); err != nil {
			a.opts.check(fmt.Errorf("after %T: %w", c.Message(), err))
		}
	}
}

func (a *budgetActor) startWallClock(c actor.Context) {
	if a.limits.WallTime <= 0 || a.wallTimer != nil {
		return
	}
	self, root := c.Self(), c.ActorSystem().Root
	left := time.Until(a.started.Add(a.limits.WallTime))
	a.wallTimer = time.AfterFunc(left, func() { root.Send(self, &wallTimeUp{}) })
}

// shutdown fails every waiting acquire and stops the timers.
func (a *budgetActor) shutdown(c actor.Context) {
	if a.wallTimer != nil {
		a.wallTimer.Stop()
	}
	for _, w := range a.waiters {
		a.fail(c, w, fmt.Errorf("acquire for %s: %w", w.req.Agent, ErrStopped))
	}
	a.waiters = nil
	clear(a.waiting)
}
