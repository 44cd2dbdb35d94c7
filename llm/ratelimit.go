package llm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/ratelimit"
)

// DefaultOutputReserve is the completion tokens a call that sets no
// MaxTokens reserves of its key's tokens a minute.
const DefaultOutputReserve = 1024

// The kinds of RateEvent.
const (
	RateWaiting = "waiting" // the call waits for its turn
	RateResumed = "resumed" // it got its turn after waiting
	RateRefused = "refused" // the provider answered 429, 529 or 503
)

// RateEvent tells the caller of Complete about rate limits: a call that
// waits for its turn (Reason ratelimit.ReasonRate or ReasonFrozen, with
// the Status that froze the key and the freeze's time Left), that got it
// after Waited, or that the provider refused (Status, RetryAfter).
// Limits are the key's as known then.
type RateEvent struct {
	Kind       string
	Reason     string
	Status     int
	Left       time.Duration
	Waited     time.Duration
	RetryAfter time.Duration
	Limits     messages.RateLimits
	Attempt    int
}

// rateKey is the quota key of model's calls through this client.
func (c *OpenAIClient) rateKey(model string) messages.RateKey {
	return messages.RateKey{Host: c.keyHost, Account: c.keyAccount, Model: model}
}

// reserve is the tokens a call reserves: its input, estimated at four
// characters a token, and its output cap (or DefaultOutputReserve).
func reserve(req Request) int64 {
	chars := 0
	for _, m := range req.Messages {
		chars += len(m.Content) + len(m.Reasoning)
		for _, tc := range m.ToolCalls {
			chars += len(tc.Name) + len(tc.Args)
		}
	}
	for _, t := range req.Tools {
		chars += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	out := req.MaxTokens
	if out <= 0 {
		out = DefaultOutputReserve
	}
	return int64(chars/4 + out)
}

// waitTurn waits for the call's turn with the client's limiter (nil
// without one), telling req.OnRate when it waits and when it resumes.
func (c *OpenAIClient) waitTurn(ctx context.Context, model string, req Request, tokens int64, attempt int) (*ratelimit.Permit, error) {
	if c.cfg.Limiter == nil {
		return nil, nil
	}
	t := ratelimit.Ticket{Key: c.rateKey(model), Limits: c.cfg.RateLimits[model], Run: req.Run, Priority: req.Priority,
		Depth: req.Depth, Tokens: tokens}
	if t.Run == "" {
		t.Run = "default"
	}
	waited := false
	p, err := c.cfg.Limiter.Wait(ctx, t, func(w ratelimit.WaitInfo) {
		waited = true
		if req.OnRate != nil {
			req.OnRate(RateEvent{Kind: RateWaiting, Reason: w.Reason, Status: w.Status, Left: w.Left, Limits: w.Limits, Attempt: attempt})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("llm: waiting for the rate limit: %w", err)
	}
	if waited && req.OnRate != nil {
		req.OnRate(RateEvent{Kind: RateResumed, Waited: p.Waited, Attempt: attempt})
	}
	return p, nil
}

// settle tells the limiter how an attempt went, and the caller of a
// provider's refusal.
func (c *OpenAIClient) settle(p *ratelimit.Permit, x *exchange, resp Response, err error, req Request, attempt int) {
	used := int64(-1)
	if err == nil {
		// What the provider counts against the key: the prompt, and the
		// completion or the call's max_tokens if larger (counted up front).
		used = int64(resp.Usage.PromptTokens + max(resp.Usage.CompletionTokens, req.MaxTokens))
	}
	if x != nil {
		p.Settle(ratelimit.Outcome{Status: x.status, Header: x.header, Used: used})
	}
	var ae *APIError
	if errors.As(err, &ae) && refusal(ae.Status) && req.OnRate != nil {
		req.OnRate(RateEvent{Kind: RateRefused, Status: ae.Status, RetryAfter: ae.RetryAfter, Attempt: attempt})
	}
}

// refusal reports the statuses that freeze a key: rate limited (429)
// and overloaded (529, 503).
func refusal(status int) bool { return status == 429 || status == 529 || status == 503 }
