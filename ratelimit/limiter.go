package ratelimit

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// Owner is the keeper of the hub's quotas, as a process reaches it: the
// Quota itself in-process, or the hub's over NATS (package cluster).
type Owner interface {
	Lease(ctx context.Context, req messages.RateLeaseRequest) (messages.RateLeaseReply, error)
	Report(ctx context.Context, rep messages.RateReport) error
}

// MaxJitter bounds the random wait each call adds after a freeze ends,
// so that the calls a freeze held back do not all come back at once.
const MaxJitter = 500 * time.Millisecond

// Reasons a call waits (WaitInfo.Reason).
const (
	ReasonRate   = "rate"   // the process's share of the key has nothing left for now
	ReasonFrozen = "frozen" // a provider's 429/529/503 froze the key
)

// Ticket is one model call asking to go: its key and the limits
// configured for it, its run (and the run's priority), its depth in the
// run's tree (0: the root) and the tokens it reserves (estimated input
// plus max_tokens).
type Ticket struct {
	Key      messages.RateKey
	Limits   messages.RateLimits
	Run      string
	Priority int
	Depth    int
	Tokens   int64
}

// WaitInfo says why a call waits: Reason, the Status that froze the key
// and how long the freeze has Left, and the key's limits as known.
type WaitInfo struct {
	Reason string
	Status int
	Left   time.Duration
	Limits messages.RateLimits
}

// Limiter is one process's view of the hub's quotas: every model call of
// the process waits in it for its turn. Calls on a key with no known
// limit go at once unless the key is frozen; on a limited key the
// process holds short leases of its fair share (LeaseTTL) and paces its
// calls from them, asking the owner only to renew, so a call needs no
// round trip in the common case. It is safe for concurrent use.
type Limiter struct {
	owner  Owner
	client string
	now    func() time.Time
	jitter func() time.Duration
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	keys map[string]*keyState
	seq  uint64
}

// LimiterOptions configure a Limiter; zero fields take the defaults.
type LimiterOptions struct {
	// Client names the process to the owner (unique on the hub).
	Client string
	Now    func() time.Time
	// Jitter is the wait added after a freeze (default: uniform in
	// [0, MaxJitter]).
	Jitter func() time.Duration
}

// NewLimiter returns a Limiter drawing on owner. Close stops it.
func NewLimiter(owner Owner, o LimiterOptions) *Limiter {
	l := &Limiter{owner: owner, client: o.Client, now: o.Now, jitter: o.Jitter, keys: map[string]*keyState{}}
	if l.now == nil {
		l.now = time.Now
	}
	if l.jitter == nil {
		l.jitter = func() time.Duration { return rand.N(MaxJitter + 1) }
	}
	if l.client == "" {
		l.client = "process"
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l
}

// Close stops the limiter's goroutines; calls still waiting fail.
func (l *Limiter) Close() {
	l.cancel()
	l.wg.Wait()
}

// Permit is a call's turn. Settle it with what the provider answered.
type Permit struct {
	l      *Limiter
	key    *keyState
	run    string
	tokens int64
	probe  bool // the first call of a key without known limits
	seen   bool // Headers was called
	Waited time.Duration
}

// Wait blocks until t's call may go (or ctx ends). onWait, if not nil,
// is told once, before the call blocks, why it waits.
func (l *Limiter) Wait(ctx context.Context, t Ticket, onWait func(WaitInfo)) (*Permit, error) {
	start := l.now()
	l.mu.Lock()
	k := l.keyFor(t.Key, start)
	k.configured = t.Limits
	k.lastUse = start
	p := &Permit{l: l, key: k, run: t.Run, tokens: max(t.Tokens, 1)}
	if !k.paced() && !start.Before(k.frozenUntil) && (k.probed || !k.probing) {
		// No limit known: the first call probes (its answer's headers may
		// tell one) while the others wait for its headers.
		p.probe = !k.probed
		k.probing = k.probing || p.probe
		l.mu.Unlock()
		return p, nil
	}
	rs := k.run(t.Run, t.Priority)
	if k.paced() && !start.Before(k.frozenUntil) && len(rs.waiters) == 0 && k.leaseValid(start) && k.take(rs, p.tokens, start) {
		l.mu.Unlock()
		return p, nil
	}
	l.seq++
	w := &waiter{depth: t.Depth, seq: l.seq, need: p.tokens, ready: make(chan struct{})}
	if start.Before(k.frozenUntil) {
		w.notBefore = k.frozenUntil.Add(l.jitter())
	}
	if len(rs.waiters) == 0 || w.depth < rs.waiters[0].depth {
		k.dirty = true // the run's demand appears, or a shallower call waits
	}
	rs.add(w)
	info := k.waitInfo(start)
	l.pump(k)
	l.mu.Unlock()
	if onWait != nil {
		onWait(info)
	}
	select {
	case <-w.ready:
		p.Waited, p.probe = l.now().Sub(start), w.probe
		return p, nil
	case <-ctx.Done():
	case <-l.ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-w.ready: // granted as it was given up: give the turn back
		if w.probe {
			k.probing = false
		} else if k.paced() {
			rs.level++
			k.level++
			rs.tokens += float64(w.need)
		}
		l.pump(k)
	default:
		rs.remove(w)
		k.dirty = true
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, context.Canceled
}

// Outcome is what the provider answered a permitted call: the HTTP Status
// (0 when no answer came), its Header, and the tokens it counts against
// the key (-1 when unknown): the prompt's, and the completion's or the
// call's max_tokens if larger, as providers count max_tokens up front.
type Outcome struct {
	Status int
	Header Header
	Used   int64
}

// Header is the part of http.Header a Limiter reads.
type Header = map[string][]string

// Headers tells the limiter the answer's headers as soon as they arrive
// (before its body): the limits they state are learned at once, and a
// key's first call lets the calls that waited for it go.
func (p *Permit) Headers(h Header) {
	if p == nil || p.seen {
		return
	}
	p.seen = true
	l, k := p.l, p.key
	obs := Observe(h, l.now())
	l.mu.Lock()
	report := l.learn(k, obs)
	if p.probe {
		k.probing, k.probed = false, true
		l.pump(k)
	}
	l.mu.Unlock()
	if report != nil {
		l.report(*report)
	}
}

// learn takes the limits obs states; it returns the report that passes
// them to the owner when they are new.
func (l *Limiter) learn(k *keyState, obs Observation) *messages.RateReport {
	learned := k.learned
	if obs.LimitRequests > 0 {
		learned.RPM = obs.LimitRequests
	}
	if obs.LimitTokens > 0 {
		learned.TPM = obs.LimitTokens
	}
	if learned == k.learned {
		return nil
	}
	k.learned, k.dirty = learned, true
	return &messages.RateReport{V: messages.ProtocolVersion, Key: k.key, Client: l.client, Learned: learned}
}

// Settle tells the limiter how the call went: the tokens it reserved but
// did not use come back to its run's share; the headers' limits are
// learned (and passed to the owner); a 429, 529 or 503 freezes the key at
// once in this process and, through the owner, in every other.
func (p *Permit) Settle(o Outcome) {
	if p == nil {
		return
	}
	l, k := p.l, p.key
	now := l.now()
	obs := Observe(o.Header, now)
	var report *messages.RateReport
	l.mu.Lock()
	if rs := k.runs[p.run]; rs != nil && o.Used >= 0 && k.tokenPaced() {
		rs.tokens = min(rs.tokens+float64(p.tokens-o.Used), rs.tokenCap())
	}
	if !p.seen {
		report = l.learn(k, obs)
	}
	if p.probe {
		k.probing, k.probed = false, true
	}
	k.pauseOnEmpty(obs, now)
	if o.Status == 429 || o.Status == 529 || o.Status == 503 {
		d := FreezeFor(o.Status, obs.RetryAfter)
		l.freeze(k, now.Add(d), o.Status)
		report = &messages.RateReport{V: messages.ProtocolVersion, Key: k.key, Client: l.client, Learned: k.learned,
			Status: o.Status, RetryAfterMS: obs.RetryAfter.Milliseconds()}
	}
	l.pump(k)
	l.mu.Unlock()
	if report != nil {
		l.report(*report)
	}
}

// report sends rep to the owner off the caller's path.
func (l *Limiter) report(rep messages.RateReport) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		ctx, cancel := context.WithTimeout(l.ctx, 5*time.Second)
		defer cancel()
		_ = l.owner.Report(ctx, rep) // the owner's notice is best effort: this process froze itself already
	}()
}

// Frozen applies the owner's notice that a key is frozen.
func (l *Limiter) Frozen(n messages.RateFrozen) {
	if n.Validate() != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	k := l.keyFor(n.Key, now)
	l.freeze(k, now.Add(time.Duration(n.ForMS)*time.Millisecond), n.Status)
	l.pump(k)
}

// freeze holds k back until until: every waiting call gets its own jitter
// after it, and what the process's shares had saved up is dropped.
func (l *Limiter) freeze(k *keyState, until time.Time, status int) {
	if !until.After(k.frozenUntil) {
		return
	}
	k.frozenUntil, k.frozenStatus = until, status
	k.level = 0
	for _, rs := range k.runs {
		rs.level = 0
		for _, w := range rs.waiters {
			w.notBefore = until.Add(l.jitter())
		}
	}
}

// keyFor returns key's state, creating it.
func (l *Limiter) keyFor(key messages.RateKey, now time.Time) *keyState {
	name := key.String()
	k := l.keys[name]
	if k == nil {
		l.sweep(now)
		k = &keyState{key: key, runs: map[string]*runState{}, at: now, lastUse: now, wake: make(chan struct{}, 1)}
		l.keys[name] = k
	}
	return k
}

// sweep forgets keys idle for idleKey (nothing waiting, not frozen).
func (l *Limiter) sweep(now time.Time) {
	for name, k := range l.keys {
		if !k.pumping && now.Sub(k.lastUse) > idleKey && now.After(k.frozenUntil) {
			delete(l.keys, name)
		}
	}
}

// waiter is one call waiting its turn.
type waiter struct {
	depth     int
	seq       uint64
	need      int64
	notBefore time.Time
	probe     bool // let go as the key's first call
	ready     chan struct{}
}

func (rs *runState) add(w *waiter) {
	i, _ := slices.BinarySearchFunc(rs.waiters, w, func(a, b *waiter) int {
		if a.depth != b.depth {
			return a.depth - b.depth
		}
		return int(a.seq) - int(b.seq)
	})
	rs.waiters = slices.Insert(rs.waiters, i, w)
}

func (rs *runState) remove(w *waiter) {
	rs.waiters = slices.DeleteFunc(rs.waiters, func(x *waiter) bool { return x == w })
}
