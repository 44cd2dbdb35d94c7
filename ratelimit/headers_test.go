package ratelimit

import (
	"net/http"
	"testing"
	"time"
)

func TestObserveOpenAIAndAnthropic(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	openai := http.Header{}
	openai.Set("x-ratelimit-limit-requests", "10000")
	openai.Set("x-ratelimit-limit-tokens", "2000000")
	openai.Set("x-ratelimit-remaining-requests", "9999")
	openai.Set("x-ratelimit-remaining-tokens", "0")
	openai.Set("x-ratelimit-reset-requests", "6m0s")
	openai.Set("x-ratelimit-reset-tokens", "9ms")
	o := Observe(openai, now)
	want := Observation{LimitRequests: 10000, LimitTokens: 2_000_000, RemainingRequests: 9999, RemainingTokens: 0,
		ResetRequests: 6 * time.Minute, ResetTokens: 9 * time.Millisecond}
	if o != want {
		t.Errorf("openai: %+v\nwant     %+v", o, want)
	}
	anthropic := http.Header{}
	anthropic.Set("anthropic-ratelimit-requests-limit", "50")
	anthropic.Set("anthropic-ratelimit-requests-remaining", "0")
	anthropic.Set("anthropic-ratelimit-requests-reset", now.Add(1500*time.Millisecond).Format(time.RFC3339Nano))
	anthropic.Set("anthropic-ratelimit-input-tokens-limit", "40000")
	anthropic.Set("retry-after", "3")
	o = Observe(anthropic, now)
	want = Observation{LimitRequests: 50, LimitTokens: 40000, RemainingRequests: 0, RemainingTokens: -1,
		ResetRequests: 1500 * time.Millisecond, RetryAfter: 3 * time.Second}
	if o != want {
		t.Errorf("anthropic: %+v\nwant        %+v", o, want)
	}
	junk := http.Header{}
	junk.Set("x-ratelimit-limit-requests", "-5")
	junk.Set("x-ratelimit-remaining-requests", "lots")
	junk.Set("x-ratelimit-reset-requests", "soon")
	junk.Set("retry-after-ms", "1e30")
	if o := Observe(junk, now); o != (Observation{RemainingRequests: -1, RemainingTokens: -1}) {
		t.Errorf("junk read as %+v", o)
	}
	ms := http.Header{}
	ms.Set("retry-after-ms", "3000")
	ms.Set("retry-after", "1")
	if d := RetryAfter(ms, now); d != 3*time.Second {
		t.Errorf("retry-after-ms wins: %v", d)
	}
}

func FuzzObserve(f *testing.F) {
	f.Add("6m0s", "9ms", "2026-01-02T03:04:05Z", "12")
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		h := http.Header{}
		h.Set("x-ratelimit-reset-requests", a)
		h.Set("x-ratelimit-reset-tokens", b)
		h.Set("anthropic-ratelimit-requests-reset", c)
		h.Set("retry-after", d)
		h.Set("x-ratelimit-limit-requests", d)
		o := Observe(h, time.Now())
		if o.ResetRequests < 0 || o.ResetTokens < 0 || o.RetryAfter < 0 || o.LimitRequests < 0 || o.ResetRequests >= maxHeaderWait {
			t.Fatalf("%+v", o)
		}
	})
}
