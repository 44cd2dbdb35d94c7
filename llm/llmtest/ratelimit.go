package llmtest

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// RateLimit makes the server a rate-limited provider: RPM requests and
// TPM tokens a minute, enforced per second as OpenAI does (a bucket of a
// second's worth, refilled continuously; 0: no limit on that
// dimension). A request costs one request and, at arrival, its prompt
// (estimated at four characters a token) plus its max_tokens. A request
// over the limit is answered 429 with retry-after-ms (the time until it
// would fit) and does not use its agent's turn. Every answer carries the
// six x-ratelimit-{limit,remaining,reset}-{requests,tokens} headers,
// resets as durations ("250ms", "1s"), unless NoHeaders, which also drops
// retry-after-ms: a provider that says nothing.
type RateLimit struct {
	RPM       int64 `json:"rpm,omitempty"`
	TPM       int64 `json:"tpm,omitempty"`
	NoHeaders bool  `json:"no_headers,omitempty"`
}

// limiter is the server's per-second buckets and its refusal windows.
type limiter struct {
	mu        sync.Mutex
	rl        RateLimit
	on        bool
	reqs      float64
	toks      float64
	at        time.Time
	refuseTo  time.Time
	refuseFor time.Duration // the retry-after of the window's 429s
}

// SetRateLimit makes the server enforce rl from now on (buckets full);
// the zero RateLimit turns enforcement off.
func (s *Server) SetRateLimit(rl RateLimit) {
	s.rate.mu.Lock()
	defer s.rate.mu.Unlock()
	s.rate.rl, s.rate.on = rl, rl.RPM > 0 || rl.TPM > 0
	s.rate.reqs, s.rate.toks, s.rate.at = perSec(rl.RPM), perSec(rl.TPM), time.Now()
}

// RefuseAll answers every request 429 with retry-after-ms retryAfter for
// the next d, as a provider does when an account is throttled whole.
// Refused requests do not use their agents' turns.
func (s *Server) RefuseAll(d, retryAfter time.Duration) {
	s.rate.mu.Lock()
	defer s.rate.mu.Unlock()
	s.rate.refuseTo, s.rate.refuseFor = time.Now().Add(d), retryAfter
}

func perSec(perMinute int64) float64 { return float64(perMinute) / 60 }

// admit charges rec to the buckets. It returns the headers to send and,
// for a refused request, the retry-after to send with its 429 (refused
// true).
func (l *limiter) admit(rec *Recorded) (h http.Header, refused bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := rec.Received
	if now.Before(l.refuseTo) {
		return l.headers(now), true, l.refuseFor
	}
	if !l.on {
		return nil, false, 0
	}
	rps, tps := perSec(l.rl.RPM), perSec(l.rl.TPM)
	dt := now.Sub(l.at).Seconds()
	if dt > 0 {
		l.reqs, l.toks, l.at = math.Min(rps, l.reqs+rps*dt), math.Min(tps, l.toks+tps*dt), now
	}
	cost := float64(tokens(rec.chars()) + rec.MaxTokens)
	short := 0.0
	if rps > 0 && l.reqs < 1 {
		short = (1 - l.reqs) / rps
	}
	if tps > 0 && l.toks < cost {
		short = math.Max(short, (math.Min(cost, tps)-l.toks)/tps)
	}
	if short > 0 {
		return l.headers(now), true, time.Duration(short*float64(time.Second)).Round(time.Millisecond) + time.Millisecond
	}
	if rps > 0 {
		l.reqs--
	}
	if tps > 0 {
		l.toks -= cost
	}
	return l.headers(now), false, 0
}

// headers are the six x-ratelimit headers of the buckets' state.
func (l *limiter) headers(now time.Time) http.Header {
	h := http.Header{}
	if l.rl.NoHeaders || !l.on {
		return h
	}
	set := func(what string, limit int64, level float64) {
		rate := perSec(limit)
		if rate <= 0 {
			return
		}
		h.Set("X-Ratelimit-Limit-"+what, strconv.FormatInt(limit, 10))
		h.Set("X-Ratelimit-Remaining-"+what, strconv.FormatInt(int64(math.Max(0, level)), 10))
		full := time.Duration((rate - level) / rate * float64(time.Second)).Round(time.Millisecond)
		h.Set("X-Ratelimit-Reset-"+what, max(0, full).String())
	}
	set("Requests", l.rl.RPM, l.reqs)
	set("Tokens", l.rl.TPM, l.toks)
	return h
}

// writeLimited answers a refused request 429.
func (l *limiter) writeLimited(w http.ResponseWriter, h http.Header, retryAfter time.Duration) {
	for k, v := range h {
		w.Header()[k] = v
	}
	f := &Failure{Kind: FailStatus, Status: http.StatusTooManyRequests, Message: "Rate limit reached (scripted)",
		Code: "rate_limit_exceeded", Type: "rate_limit_error"}
	l.mu.Lock()
	quiet := l.rl.NoHeaders
	l.mu.Unlock()
	if !quiet && retryAfter > 0 {
		w.Header().Set("Retry-After-Ms", strconv.FormatInt(max(1, retryAfter.Milliseconds()), 10))
	}
	writeError(w, http.StatusTooManyRequests, f)
}
