package ratelimit

import (
	"math"
	"slices"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// burstWindow sizes what a share saves up while nobody uses it: a
// quarter of a second of it (at least one request).
const burstWindow = 250 * time.Millisecond

// minAsk spaces a process's lease requests for one key.
const minAsk = 100 * time.Millisecond

// keyState is one key in one process: its limits, its freeze, the
// process's shares per run and the calls waiting.
type keyState struct {
	key          messages.RateKey
	configured   messages.RateLimits // model.rate_limit for the key
	learned      messages.RateLimits // from the answers' headers
	eff          messages.RateLimits // the owner's word, once leased
	leased       bool
	probing      bool // the key's first call is out, its headers not yet seen
	probed       bool
	frozenUntil  time.Time
	frozenStatus int
	runs         map[string]*runState
	level        float64 // the process's own pacing: requests saved up
	at           time.Time
	leaseUntil   time.Time
	ttl          time.Duration
	asking       bool
	dirty        bool // the demand changed since the last lease
	lastAsk      time.Time
	lastUse      time.Time
	pumping      bool
	wake         chan struct{}
}

// runState is one run's share of a key in this process.
type runState struct {
	priority    int
	rps, tps    float64
	level       float64 // requests saved up
	tokens      float64 // tokens saved up (negative: owed)
	waiters     []*waiter
	needOfFirst int64
}

func (k *keyState) run(run string, priority int) *runState {
	rs := k.runs[run]
	if rs == nil {
		rs = &runState{}
		k.runs[run] = rs
	}
	rs.priority = priority
	return rs
}

// limits are the key's limits as this process knows them.
func (k *keyState) limits() messages.RateLimits {
	l := messages.RateLimits{RPM: tighter(k.configured.RPM, k.learned.RPM), TPM: tighter(k.configured.TPM, k.learned.TPM)}
	if k.leased {
		l = messages.RateLimits{RPM: tighter(l.RPM, k.eff.RPM), TPM: tighter(l.TPM, k.eff.TPM)}
	}
	return l
}

func (k *keyState) paced() bool      { return k.limits() != messages.RateLimits{} }
func (k *keyState) tokenPaced() bool { return k.limits().TPM > 0 }
func (k *keyState) requestPaced() bool {
	return k.limits().RPM > 0
}
func (k *keyState) leaseValid(now time.Time) bool { return now.Before(k.leaseUntil) }

func (rs *runState) requestCap() float64 { return max(2, rs.rps*burstWindow.Seconds()) }
func (rs *runState) tokenCap() float64   { return max(rs.tps, float64(rs.needOfFirst)) }

func (k *keyState) processRate() float64 {
	r := 0.0
	for _, rs := range k.runs {
		r += rs.rps
	}
	return r
}

// accrue adds what the shares earned since the last look, while the
// lease held and the key was not frozen.
func (k *keyState) accrue(now time.Time) {
	from := k.at
	k.at = now
	if from.Before(k.frozenUntil) {
		from = k.frozenUntil
	}
	end := now
	if k.leaseUntil.Before(end) {
		end = k.leaseUntil
	}
	dt := end.Sub(from).Seconds()
	if dt <= 0 {
		return
	}
	for _, rs := range k.runs {
		if c := rs.requestCap(); rs.level < c {
			rs.level = min(c, rs.level+rs.rps*dt)
		}
		if c := rs.tokenCap(); rs.tokens < c {
			rs.tokens = min(c, rs.tokens+rs.tps*dt)
		}
	}
	if c := max(1, k.processRate()*burstWindow.Seconds()); k.level < c {
		k.level = min(c, k.level+k.processRate()*dt)
	}
}

// take spends one request and need tokens of rs's share if it has them.
func (k *keyState) take(rs *runState, need int64, now time.Time) bool {
	k.accrue(now)
	if k.requestPaced() && (rs.level < 1 || k.level < 1) {
		return false
	}
	if k.tokenPaced() && rs.tokens < float64(need) {
		return false
	}
	if k.requestPaced() {
		rs.level--
		k.level--
	}
	if k.tokenPaced() {
		rs.tokens -= float64(need)
	}
	return true
}

// readyAt is when rs's share will have what a call of need tokens takes.
func (k *keyState) readyAt(rs *runState, need int64, now time.Time) time.Time {
	wait := 0.0
	if k.requestPaced() {
		wait = max(wait, until(1-rs.level, rs.rps), until(1-k.level, k.processRate()))
	}
	if k.tokenPaced() {
		wait = max(wait, until(float64(need)-rs.tokens, rs.tps))
	}
	if math.IsInf(wait, 1) || wait > 1 {
		wait = 1
	}
	return now.Add(time.Duration(wait * float64(time.Second)))
}

func until(short, rate float64) float64 {
	switch {
	case short <= 0:
		return 0
	case rate <= 0:
		return math.Inf(1)
	}
	return short / rate
}

func (k *keyState) waitInfo(now time.Time) WaitInfo {
	info := WaitInfo{Reason: ReasonRate, Limits: k.limits()}
	if now.Before(k.frozenUntil) && k.frozenStatus != 0 {
		info.Reason, info.Status, info.Left = ReasonFrozen, k.frozenStatus, k.frozenUntil.Sub(now)
	}
	return info
}

// pauseOnEmpty holds the key back a little when an answer said nothing
// is left of it: until one request (or the tokens) should be back.
func (k *keyState) pauseOnEmpty(o Observation, now time.Time) {
	var pause time.Duration
	if rpm := k.limits().RPM; o.RemainingRequests == 0 && rpm > 0 {
		pause = time.Minute / time.Duration(rpm)
		if o.ResetRequests > 0 {
			pause = min(pause, o.ResetRequests)
		}
	}
	if o.RemainingTokens == 0 && o.ResetTokens > 0 {
		pause = max(pause, min(o.ResetTokens, time.Second))
	}
	if until := now.Add(pause); pause > 0 && until.After(k.frozenUntil) {
		k.frozenUntil, k.frozenStatus = until, 0
	}
}

// pump makes sure k's goroutine runs and looks again.
func (l *Limiter) pump(k *keyState) {
	if !k.pumping {
		k.pumping = true
		l.wg.Add(1)
		go l.serve(k)
		return
	}
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// serve lets k's waiting calls go as the shares allow, asking the owner
// for leases, until nothing waits.
func (l *Limiter) serve(k *keyState) {
	defer l.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		l.mu.Lock()
		now := l.now()
		next, ask := l.step(k, now)
		if next.IsZero() {
			k.pumping = false
			giveBack := k.paced() && k.processRate() > 0 && !k.asking
			if giveBack {
				k.asking = true
			}
			l.mu.Unlock()
			if giveBack {
				l.renew(k) // no calls wait: the shares go back to the others at once
			}
			return
		}
		l.mu.Unlock()
		if ask {
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				l.renew(k)
			}()
		}
		timer.Reset(max(time.Millisecond, next.Sub(now)))
		select {
		case <-timer.C:
		case <-k.wake:
			if !timer.Stop() {
				<-timer.C
			}
		case <-l.ctx.Done():
			return
		}
	}
}

// step lets go every call that may go now and returns when to look again
// (zero: nothing waits) and whether to ask the owner for a lease.
func (l *Limiter) step(k *keyState, now time.Time) (time.Time, bool) {
	runs := make([]*runState, 0, len(k.runs))
	for _, rs := range k.runs {
		if len(rs.waiters) > 0 {
			runs = append(runs, rs)
		}
	}
	if len(runs) == 0 {
		return time.Time{}, false
	}
	// The shallowest (then oldest) head goes first: parents before children.
	slices.SortFunc(runs, func(a, b *runState) int {
		if a.waiters[0].depth != b.waiters[0].depth {
			return a.waiters[0].depth - b.waiters[0].depth
		}
		return int(a.waiters[0].seq) - int(b.waiters[0].seq)
	})
	next := now.Add(time.Second)
	if now.Before(k.frozenUntil) {
		next = k.frozenUntil
	} else {
		for _, rs := range runs {
			next = earliest(next, l.release(k, rs, now))
		}
	}
	ask := false
	if k.paced() && k.waiting() && !k.asking {
		renewAt := k.leaseUntil.Add(-k.ttl / 2)
		if k.starving() {
			renewAt = k.lastAsk.Add(2 * minAsk)
		}
		if k.dirty || !now.Before(renewAt) {
			renewAt = now
		}
		if earliestAsk := k.lastAsk.Add(minAsk); renewAt.Before(earliestAsk) {
			renewAt = earliestAsk
		}
		if !now.Before(renewAt) {
			ask, k.asking, k.lastAsk, k.dirty = true, true, now, false
		} else {
			next = earliest(next, renewAt)
		}
	}
	if !k.waiting() {
		return now.Add(time.Millisecond), ask // let the loop end (and give the shares back)
	}
	return next, ask
}

// release lets rs's calls go while its share allows; it returns when to
// look again.
func (l *Limiter) release(k *keyState, rs *runState, now time.Time) time.Time {
	next := now.Add(time.Second)
	for len(rs.waiters) > 0 {
		i := slices.IndexFunc(rs.waiters, func(w *waiter) bool { return !now.Before(w.notBefore) })
		if i < 0 {
			for _, w := range rs.waiters {
				next = earliest(next, w.notBefore)
			}
			return next
		}
		w := rs.waiters[i]
		rs.needOfFirst = w.need
		if !k.paced() && k.probing {
			return next // the first call's headers come first; Headers wakes us
		}
		if !k.paced() && !k.probed {
			k.probing, w.probe = true, true // this one probes
		}
		if k.paced() && (!k.leaseValid(now) || !k.take(rs, w.need, now)) {
			if k.leaseValid(now) {
				next = earliest(next, k.readyAt(rs, w.need, now))
			}
			return next
		}
		rs.waiters = slices.Delete(rs.waiters, i, i+1)
		close(w.ready)
	}
	rs.needOfFirst = 0
	return next
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func (k *keyState) waiting() bool {
	for _, rs := range k.runs {
		if len(rs.waiters) > 0 {
			return true
		}
	}
	return false
}

// starving reports a run with calls waiting and no share yet.
func (k *keyState) starving() bool {
	for _, rs := range k.runs {
		if len(rs.waiters) > 0 && rs.rps == 0 && rs.tps == 0 {
			return true
		}
	}
	return false
}
