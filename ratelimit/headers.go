package ratelimit

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Observation is what one answer's headers say of the key's quota. A
// field is 0 (or -1 for the remaining counts) when the header is absent
// or unreadable.
type Observation struct {
	LimitRequests, LimitTokens         int64
	RemainingRequests, RemainingTokens int64 // -1: not sent
	ResetRequests, ResetTokens         time.Duration
	RetryAfter                         time.Duration
}

// Observe reads the rate-limit headers of an answer: OpenAI's
// x-ratelimit-{limit,remaining,reset}-{requests,tokens} (resets as
// durations such as "9ms", "1s", "6m0s") and Anthropic's
// anthropic-ratelimit-{requests,tokens,input-tokens}-{limit,remaining,reset}
// (resets as RFC 3339 times), plus retry-after-ms and retry-after
// (seconds or an HTTP date). now turns times into durations.
func Observe(h http.Header, now time.Time) Observation {
	o := Observation{RemainingRequests: -1, RemainingTokens: -1}
	if h == nil {
		return o
	}
	o.LimitRequests = count(h, "X-Ratelimit-Limit-Requests", "Anthropic-Ratelimit-Requests-Limit")
	o.LimitTokens = count(h, "X-Ratelimit-Limit-Tokens", "Anthropic-Ratelimit-Tokens-Limit", "Anthropic-Ratelimit-Input-Tokens-Limit")
	o.RemainingRequests = remaining(h, "X-Ratelimit-Remaining-Requests", "Anthropic-Ratelimit-Requests-Remaining")
	o.RemainingTokens = remaining(h, "X-Ratelimit-Remaining-Tokens", "Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Remaining")
	o.ResetRequests = reset(h, now, "X-Ratelimit-Reset-Requests", "Anthropic-Ratelimit-Requests-Reset")
	o.ResetTokens = reset(h, now, "X-Ratelimit-Reset-Tokens", "Anthropic-Ratelimit-Tokens-Reset", "Anthropic-Ratelimit-Input-Tokens-Reset")
	o.RetryAfter = RetryAfter(h, now)
	return o
}

// maxHeaderWait bounds a believable reset or retry-after: a larger one is
// read as absent.
const maxHeaderWait = 24 * time.Hour

// RetryAfter reads retry-after-ms (milliseconds) or Retry-After (seconds
// or an HTTP date); 0 when absent, unreadable or beyond a day.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < float64(maxHeaderWait/time.Millisecond) {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < maxHeaderWait.Seconds() {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 && d < maxHeaderWait {
			return d
		}
	}
	return 0
}

func first(h http.Header, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(h.Get(n)); v != "" {
			return v
		}
	}
	return ""
}

func count(h http.Header, names ...string) int64 {
	n, err := strconv.ParseInt(first(h, names...), 10, 64)
	if err != nil || n <= 0 || n > 1e15 {
		return 0
	}
	return n
}

func remaining(h http.Header, names ...string) int64 {
	v := first(h, names...)
	if v == "" {
		return -1
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > 1e15 {
		return -1
	}
	return n
}

// reset reads a reset as a duration ("9ms", "6m0s", "1.5s", or a bare
// number of seconds) or an RFC 3339 time (Anthropic's).
func reset(h http.Header, now time.Time, names ...string) time.Duration {
	v := first(h, names...)
	if v == "" {
		return 0
	}
	if d, err := time.ParseDuration(v); err == nil {
		return clampWait(d)
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return clampWait(time.Duration(s * float64(time.Second)))
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return clampWait(t.Sub(now))
	}
	return 0
}

func clampWait(d time.Duration) time.Duration {
	if d <= 0 || d >= maxHeaderWait {
		return 0
	}
	return d
}
