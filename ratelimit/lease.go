package ratelimit

import (
	"context"
	"slices"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// demand is what the process asks of the owner: per run with calls
// waiting (or holding a share it gives back), its shallowest calls.
func (k *keyState) demand() []messages.RateDemand {
	var out []messages.RateDemand
	for name, rs := range k.runs {
		d := messages.RateDemand{Run: name, Priority: rs.priority}
		if len(rs.waiters) > 0 {
			d.Depth = rs.waiters[0].depth
			for _, w := range rs.waiters {
				if w.depth == d.Depth {
					d.Waiting++
				}
			}
			d.NeedTokens = rs.waiters[0].need
			d.Starved = rs.level < 1 || (k.tokenPaced() && rs.tokens < float64(d.NeedTokens))
		} else if rs.rps == 0 && rs.tps == 0 {
			continue
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b messages.RateDemand) int {
		if a.Run < b.Run {
			return -1
		}
		return 1
	})
	return out
}

// renew asks the owner for the process's shares of k and applies them.
// Without an answer the process paces itself on the limits it knows, as
// if it were alone, until the owner answers again.
func (l *Limiter) renew(k *keyState) {
	l.mu.Lock()
	req := messages.RateLeaseRequest{V: messages.ProtocolVersion, Key: k.key, Client: l.client,
		Limits: k.configured, Learned: k.learned, Demand: k.demand()}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(l.ctx, 5*time.Second)
	reply, err := l.owner.Lease(ctx, req)
	cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	k.accrue(now)
	k.asking = false
	if err == nil {
		err = reply.Validate()
	}
	if err != nil {
		reply = l.alone(k, req)
	}
	k.eff, k.leased = reply.Limits, true
	k.ttl = time.Duration(reply.TTLMS) * time.Millisecond
	k.leaseUntil = now.Add(k.ttl)
	for _, rs := range k.runs {
		rs.rps, rs.tps = 0, 0
	}
	for _, s := range reply.Shares {
		rs := k.runs[s.Run]
		if rs == nil {
			continue
		}
		rs.rps, rs.tps = s.RPS, s.TPS
		rs.level += float64(s.Burst)
		k.level += float64(s.Burst)
		rs.tokens += float64(s.BurstTokens)
	}
	for name, rs := range k.runs {
		if len(rs.waiters) == 0 && rs.rps == 0 && rs.tps == 0 {
			delete(k.runs, name)
		}
	}
	if reply.FrozenMS > 0 {
		l.freeze(k, now.Add(time.Duration(reply.FrozenMS)*time.Millisecond), max(k.frozenStatus, 429))
	}
	if k.pumping {
		select {
		case k.wake <- struct{}{}:
		default:
		}
	} else if k.waiting() {
		l.pump(k)
	}
}

// alone is the lease a process gives itself when the owner does not
// answer: the known limits, split evenly between its runs with calls
// waiting.
func (l *Limiter) alone(k *keyState, req messages.RateLeaseRequest) messages.RateLeaseReply {
	lim := messages.RateLimits{RPM: tighter(k.configured.RPM, k.learned.RPM), TPM: tighter(k.configured.TPM, k.learned.TPM)}
	reply := messages.RateLeaseReply{V: messages.ProtocolVersion, Limits: lim, TTLMS: LeaseTTL.Milliseconds()}
	n := 0
	for _, d := range req.Demand {
		if d.Waiting > 0 {
			n++
		}
	}
	for _, d := range req.Demand {
		if d.Waiting > 0 {
			reply.Shares = append(reply.Shares, messages.RateShare{Run: d.Run,
				RPS: perSecond(lim.RPM, Safety) / float64(n), TPS: perSecond(lim.TPM, Safety) / float64(n)})
		}
	}
	return reply
}
