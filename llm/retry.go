package llm

import (
	"context"
	"errors"
	"fmt"
	"github.com/troupe-ai/troupe/internal/text"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// backoff is the wait before attempt+1 after attempt failed: the
// provider's Retry-After when it gave one (capped by MaxRetryAfter, which
// may exceed MaxBackoff), else a uniformly random wait up to
// InitialBackoff·2^(attempt-1), capped by MaxBackoff (full jitter).
func (c *OpenAIClient) backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, c.cfg.MaxRetryAfter)
	}
	ceiling := c.cfg.InitialBackoff
	for i := 1; i < attempt && ceiling < c.cfg.MaxBackoff; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, c.cfg.MaxBackoff)
	if ceiling <= 0 {
		return 0
	}
	return rand.N(ceiling + 1)
}

// sleep waits d or until ctx ends (then its error).
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// parseRetryAfter reads retry-after-ms (milliseconds) or Retry-After
// (seconds or an HTTP date); 0 when absent or unreadable.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < float64(maxRetryAfterHeader/time.Millisecond) {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < maxRetryAfterHeader.Seconds() {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 && d < maxRetryAfterHeader {
			return d
		}
	}
	return 0
}

// maxRetryAfterHeader bounds a believable Retry-After; beyond it the
// header is treated as absent (MaxRetryAfter caps the believable ones).
const maxRetryAfterHeader = 1e6 * time.Second

// classify turns an attempt's error into an *APIError, a transient error,
// or a context error. callCtx is the caller's context: when it has ended,
// its error wins; an attempt that merely ran out its own timeout is
// transient.
func (c *OpenAIClient) classify(callCtx context.Context, err error) error {
	if callCtx.Err() != nil {
		return callCtx.Err()
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae
	}
	var oe *openai.Error
	if errors.As(err, &oe) {
		return c.apiError(oe)
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		// An error event in the middle of a stream (OpenRouter and others
		// report upstream failures so): transient, with the provider's text.
		return transient(fmt.Errorf("model API: error event in stream: %s", c.secret.String(text.Clip(string(se.Event.Data), 300))))
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return transient(fmt.Errorf("model API: attempt timed out after %s", c.cfg.RequestTimeout))
	}
	var te *transientError
	if errors.As(err, &te) {
		return err
	}
	if errors.Is(err, ErrBadRequest) || errors.Is(err, ErrNotEventStream) || errors.Is(err, ErrOverLimit) {
		return err
	}
	// Connection refused/reset, EOF, TLS trouble: worth another attempt.
	// net/http's error names the URL; show it without query or user info.
	var ue *url.Error
	if errors.As(err, &ue) {
		return transient(fmt.Errorf("model API: %s %s: %w", ue.Op, redactURL(ue.URL), ue.Err))
	}
	return transient(fmt.Errorf("model API: %w", err))
}

// apiError converts the SDK's error when no answer was seen by the
// exchange (it always is in practice; this is the safe fallback).
func (c *OpenAIClient) apiError(oe *openai.Error) *APIError {
	var h http.Header
	if oe.Response != nil {
		h = oe.Response.Header
	}
	body := []byte("{}")
	if raw := oe.RawJSON(); raw != "" {
		body = []byte(`{"error":` + raw + `}`)
	}
	return c.statusError(oe.StatusCode, h, body)
}
