package llm_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/ratelimit"
)

// limited returns a client whose calls wait in a limiter of its own
// (a hub of one process).
func limited(t *testing.T, srv *llmtest.Server, edit func(*llm.Config)) *llm.OpenAIClient {
	t.Helper()
	lim := ratelimit.NewLimiter(ratelimit.NewQuota(ratelimit.QuotaOptions{}), ratelimit.LimiterOptions{Client: "test"})
	t.Cleanup(lim.Close)
	return newClient(t, srv, func(c *llm.Config) {
		c.Limiter = lim
		if edit != nil {
			edit(c)
		}
	})
}

// hammer makes n callers call c until d passes and returns what the
// server saw.
func hammer(t *testing.T, srv *llmtest.Server, c llm.Client, n int, d time.Duration, maxTokens int) (ok, limited int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req := request("go")
				req.Agent = "a" + string(rune('a'+i))
				req.MaxTokens = maxTokens
				if _, err := c.Complete(ctx, req, nil); err != nil && ctx.Err() == nil {
					t.Errorf("call: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, r := range srv.Requests() {
		switch {
		case r.RateLimited:
			limited++
		case r.Status == 200 && !r.Canceled:
			ok++
		}
	}
	return ok, limited
}

// A provider enforcing 4 requests a second (per second, as OpenAI does)
// and saying so in its headers refuses at most 2% of what twelve callers
// send through the limiter, and the limiter learns its limit from the
// first answer. The same provider saying nothing holds as well once the
// limit is configured (model.rate_limit).
func TestLimiterHoldsAProvidersRate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		rl        llmtest.RateLimit
		config    messages.RateLimits
		maxTokens int
	}{
		{"headers", llmtest.RateLimit{RPM: 240, TPM: 10_000_000}, messages.RateLimits{}, 0},
		{"config, no headers", llmtest.RateLimit{RPM: 240, TPM: 10_000_000, NoHeaders: true}, messages.RateLimits{RPM: 240}, 0},
		// Tokens bind: each call reserves its prompt and its 200 max_tokens,
		// the provider charges the same, 800 a second (about 4 calls).
		{"tokens", llmtest.RateLimit{TPM: 48_000}, messages.RateLimits{}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(llmtest.Script{RateLimit: &tc.rl,
				Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Fallback: true}, Repeat: true, Turns: []llmtest.Turn{llmtest.Text("ok")}}}})
			defer srv.Close()
			c := limited(t, srv, func(c *llm.Config) { c.RateLimits = map[string]messages.RateLimits{"m-default": tc.config} })
			ok, refused := hammer(t, srv, c, 12, 4*time.Second, tc.maxTokens)
			t.Logf("%s: %d answered, %d refused 429 in 4 s", tc.name, ok, refused)
			if refused > (ok+refused)*2/100+1 { // the one allowed: the first burst before the limit is known
				t.Errorf("%d of %d requests refused", refused, ok+refused)
			}
			if ok < 6 {
				t.Errorf("only %d answered", ok)
			}
		})
	}
}

// A 429 is retried only through the limiter: the retry waits out the
// provider's retry-after (plus its jitter), never sooner, and the caller
// hears of the refusal, the wait and its end. model.max_retries bounds the
// attempts across 429s.
func TestRetryWaitsForTheLimiter(t *testing.T) {
	srv := llmtest.New(script(llmtest.RateLimited(300*time.Millisecond), llmtest.Text("after")))
	defer srv.Close()
	c := limited(t, srv, nil)
	var mu sync.Mutex
	var evs []llm.RateEvent
	req := request("x")
	req.OnRate = func(e llm.RateEvent) { mu.Lock(); evs = append(evs, e); mu.Unlock() }
	resp, err := c.Complete(context.Background(), req, nil)
	if err != nil || resp.Message.Content != "after" || resp.Attempts != 2 {
		t.Fatalf("resp %+v err %v", resp, err)
	}
	reqs := srv.Requests()
	if gap := reqs[1].Received.Sub(reqs[0].Answered); gap < 300*time.Millisecond {
		t.Errorf("retried %v after a 429 asking for 300ms", gap)
	}
	kinds := []string{}
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	if len(evs) != 3 || evs[0].Kind != llm.RateRefused || evs[0].Status != 429 || evs[0].RetryAfter != 300*time.Millisecond ||
		evs[1].Kind != llm.RateWaiting || evs[1].Reason != ratelimit.ReasonFrozen || evs[2].Kind != llm.RateResumed || evs[2].Waited < 250*time.Millisecond {
		t.Errorf("events %v: %+v", kinds, evs)
	}

	// Four 429s in a row with max_retries 3: four attempts, then the error.
	srv2 := llmtest.New(script(llmtest.RateLimited(time.Millisecond), llmtest.RateLimited(time.Millisecond),
		llmtest.RateLimited(time.Millisecond), llmtest.RateLimited(time.Millisecond), llmtest.Text("never")))
	defer srv2.Close()
	c2 := limited(t, srv2, func(c *llm.Config) { c.MaxAttempts = 4 })
	_, err = c2.Complete(context.Background(), request("x"), nil)
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Status != 429 || len(srv2.Requests()) != 4 {
		t.Errorf("err %v after %d requests", err, len(srv2.Requests()))
	}
}
