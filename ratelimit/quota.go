package ratelimit

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// Defaults of the quota's owner.
const (
	// LeaseTTL is how long a lease's shares hold; a process renews at
	// half of it while it has calls waiting.
	LeaseTTL = time.Second
	// Safety is the share of a provider's limit the owner hands out, so
	// that timing jitter between processes and the provider's own
	// per-second enforcement leave room.
	Safety = 0.96
	// DefaultFreeze freezes a key after a 429 that says nothing of when
	// to come back; an overload (529, 503) freezes it twice as long.
	DefaultFreeze = time.Second
	// slackWindow sizes the burst the owner may hand out from rate no
	// share uses: a quarter of a second of the key's rate (at least one
	// request).
	slackWindow = 250 * time.Millisecond
	// idleKey: a key no process has asked of for this long is forgotten.
	idleKey = 5 * time.Minute
)

// Quota is the owner of every provider key's quota on a hub: it divides
// each key's rate into shares, one per process and run that has calls
// waiting, and freezes a key for everyone when a provider says 429.
//
// It never waits: a lease is answered at once with what is fair now, and
// a process whose share is smaller than its fair one (others still hold
// theirs) asks again soon. It is safe for concurrent use; every key's
// state is trimmed when its processes stop asking.
type Quota struct {
	mu       sync.Mutex
	keys     map[string]*keyQuota
	now      func() time.Time
	onFreeze func(messages.RateFrozen)
	ttl      time.Duration
	safety   float64
	sweptAt  time.Time
}

// QuotaOptions configure a Quota; zero fields take the defaults.
type QuotaOptions struct {
	// OnFreeze is told (outside the Quota's lock) each time a key's freeze
	// is set or extended, to tell every process.
	OnFreeze func(messages.RateFrozen)
	TTL      time.Duration
	Safety   float64
	Now      func() time.Time
}

// NewQuota returns an empty Quota.
func NewQuota(o QuotaOptions) *Quota {
	q := &Quota{keys: map[string]*keyQuota{}, now: o.Now, onFreeze: o.OnFreeze, ttl: o.TTL, safety: o.Safety}
	if q.now == nil {
		q.now = time.Now
	}
	if q.ttl <= 0 {
		q.ttl = LeaseTTL
	}
	if q.safety <= 0 || q.safety > 1 {
		q.safety = Safety
	}
	return q
}

var _ Owner = (*Quota)(nil)

type keyQuota struct {
	clients      map[string]*clientLease
	learned      messages.RateLimits
	frozenUntil  time.Time
	frozenStatus int
	slackReq     float64
	slackTok     float64
	slackAt      time.Time
	seen         time.Time
}

// clientLease is one process's standing with a key.
type clientLease struct {
	limits messages.RateLimits // its configured limits
	demand []messages.RateDemand
	shares map[string]share // run → share
	until  time.Time
}

type share struct{ rps, tps float64 }

// Lease answers a process's request for its shares of a key.
func (q *Quota) Lease(_ context.Context, req messages.RateLeaseRequest) (messages.RateLeaseReply, error) {
	if err := req.Validate(); err != nil {
		return messages.RateLeaseReply{}, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	k := q.key(req.Key, now)
	k.expire(now, req.Client)
	cl := k.clients[req.Client]
	if cl == nil {
		cl = &clientLease{}
		k.clients[req.Client] = cl
	}
	cl.limits = req.Limits
	if req.Learned != (messages.RateLimits{}) {
		k.learned = req.Learned
	}
	cl.demand = cl.demand[:0]
	for _, d := range req.Demand {
		if d.Waiting > 0 {
			cl.demand = append(cl.demand, d)
		}
	}
	cl.until = now.Add(q.ttl)
	lim := k.effective()
	reply := messages.RateLeaseReply{V: messages.ProtocolVersion, Limits: lim, TTLMS: q.ttl.Milliseconds()}
	if now.Before(k.frozenUntil) {
		reply.FrozenMS = max(1, k.frozenUntil.Sub(now).Milliseconds())
	}
	if lim == (messages.RateLimits{}) {
		cl.shares = nil // no limit known: nobody paces
		return reply, nil
	}
	r, t := perSecond(lim.RPM, q.safety), perSecond(lim.TPM, q.safety)
	k.accrueSlack(now, r, t)
	mine := k.targets(req.Client, r, t)
	otherR, otherT := k.held(req.Client)
	scaleR, scaleT := fit(mine, r-otherR, true), fit(mine, t-otherT, false)
	cl.shares = make(map[string]share, len(mine))
	for run, s := range mine {
		cl.shares[run] = share{rps: s.rps * scaleR, tps: s.tps * scaleT}
	}
	for _, d := range cl.demand {
		s := cl.shares[d.Run]
		rs := messages.RateShare{Run: d.Run, RPS: s.rps, TPS: s.tps}
		if d.Starved && reply.FrozenMS == 0 {
			if lim.RPM > 0 && k.slackReq >= 1 {
				rs.Burst, k.slackReq = 1, k.slackReq-1
			}
			if need := float64(d.NeedTokens); lim.TPM > 0 && need > 0 && k.slackTok >= need {
				rs.BurstTokens, k.slackTok = d.NeedTokens, k.slackTok-need
			}
		}
		reply.Shares = append(reply.Shares, rs)
	}
	return reply, nil
}

// Report takes what a provider said to one process: learned limits, and a
// 429/529/503 that freezes the key for everyone.
func (q *Quota) Report(_ context.Context, rep messages.RateReport) error {
	if err := rep.Validate(); err != nil {
		return err
	}
	q.mu.Lock()
	now := q.now()
	k := q.key(rep.Key, now)
	if rep.Learned != (messages.RateLimits{}) {
		k.learned = rep.Learned
	}
	var notice *messages.RateFrozen
	if rep.Status != 0 {
		d := FreezeFor(rep.Status, time.Duration(rep.RetryAfterMS)*time.Millisecond)
		if until := now.Add(d); until.After(k.frozenUntil) {
			k.frozenUntil, k.frozenStatus = until, rep.Status
			notice = &messages.RateFrozen{V: messages.ProtocolVersion, Key: rep.Key, ForMS: max(1, d.Milliseconds()), Status: rep.Status}
		}
		k.slackReq, k.slackTok = 0, 0 // nobody bursts after a refusal
	}
	q.mu.Unlock()
	if notice != nil && q.onFreeze != nil {
		q.onFreeze(*notice)
	}
	return nil
}

// FreezeFor is how long a refusal freezes its key: the provider's
// retry-after when it gave one, else DefaultFreeze (twice that for an
// overload).
func FreezeFor(status int, retryAfter time.Duration) time.Duration {
	switch {
	case retryAfter > 0:
		return min(retryAfter, time.Hour)
	case status == 429:
		return DefaultFreeze
	default:
		return 2 * DefaultFreeze
	}
}

// key returns k's state, creating it, and forgets keys long idle.
func (q *Quota) key(key messages.RateKey, now time.Time) *keyQuota {
	if now.Sub(q.sweptAt) > time.Minute {
		q.sweptAt = now
		for name, k := range q.keys {
			if now.Sub(k.seen) > idleKey && now.After(k.frozenUntil) {
				delete(q.keys, name)
			}
		}
	}
	k := q.keys[key.String()]
	if k == nil {
		k = &keyQuota{clients: map[string]*clientLease{}, slackAt: now, slackReq: math.Inf(1), slackTok: math.Inf(1)}
		q.keys[key.String()] = k
	}
	k.seen = now
	return k
}

// expire drops the leases that ran out, but keep's.
func (k *keyQuota) expire(now time.Time, keep string) {
	for id, cl := range k.clients {
		if id != keep && now.After(cl.until) {
			delete(k.clients, id)
		}
	}
}

// effective is the tightest of the limits configured by the processes
// with leases and the limits the provider's headers gave.
func (k *keyQuota) effective() messages.RateLimits {
	lim := k.learned
	for _, cl := range k.clients {
		lim.RPM = tighter(lim.RPM, cl.limits.RPM)
		lim.TPM = tighter(lim.TPM, cl.limits.TPM)
	}
	return lim
}

func tighter(a, b int64) int64 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// perSecond is a per-minute limit as a rate a second, less the safety
// margin; 0 stays 0 (no limit).
func perSecond(perMinute int64, safety float64) float64 { return float64(perMinute) / 60 * safety }

// accrueSlack adds the rate no share uses to the burst pool.
func (k *keyQuota) accrueSlack(now time.Time, r, t float64) {
	dt := now.Sub(k.slackAt).Seconds()
	k.slackAt = now
	heldR, heldT := k.held("")
	capR, capT := max(1, r*slackWindow.Seconds()), t*slackWindow.Seconds()
	k.slackReq = min(capR, k.slackReq+max(0, r-heldR)*dt)
	k.slackTok = min(capT, k.slackTok+max(0, t-heldT)*dt)
}

// held sums the shares of every lease but skip's.
func (k *keyQuota) held(skip string) (r, t float64) {
	for id, cl := range k.clients {
		if id == skip {
			continue
		}
		for _, s := range cl.shares {
			r, t = r+s.rps, t+s.tps
		}
	}
	return r, t
}

// targets is client's fair share of r and t, per run: the key's rate is
// split between the runs with calls waiting (weighted by their
// priority), and a run's part between the processes whose waiting calls
// are the run's shallowest (the parent before its children), by how many
// wait.
func (k *keyQuota) targets(client string, r, t float64) map[string]share {
	type runDemand struct {
		weight  float64
		depth   int
		waiting int
	}
	runs := map[string]*runDemand{}
	for _, cl := range k.clients {
		for _, d := range cl.demand {
			rd := runs[d.Run]
			w := float64(max(1, d.Priority))
			if rd == nil {
				runs[d.Run] = &runDemand{weight: w, depth: d.Depth}
				continue
			}
			rd.weight, rd.depth = max(rd.weight, w), min(rd.depth, d.Depth)
		}
	}
	total := 0.0
	for _, rd := range runs {
		total += rd.weight
	}
	for _, cl := range k.clients {
		for _, d := range cl.demand {
			if rd := runs[d.Run]; d.Depth == rd.depth {
				rd.waiting += d.Waiting
			}
		}
	}
	out := map[string]share{}
	for _, d := range k.clients[client].demand {
		rd := runs[d.Run]
		if d.Depth != rd.depth || rd.waiting == 0 {
			out[d.Run] = share{}
			continue
		}
		part := rd.weight / total * float64(d.Waiting) / float64(rd.waiting)
		out[d.Run] = share{rps: r * part, tps: t * part}
	}
	return out
}

// fit is the factor that brings the shares' sum of one dimension within
// room (1 when they fit).
func fit(shares map[string]share, room float64, requests bool) float64 {
	sum := 0.0
	for _, s := range shares {
		if requests {
			sum += s.rps
		} else {
			sum += s.tps
		}
	}
	switch {
	case sum <= room:
		return 1
	case room <= 0:
		return 0
	}
	return room / sum
}
