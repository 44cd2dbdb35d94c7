package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/internal/redact"
	"github.com/troupe-ai/troupe/ratelimit"
	"github.com/troupe-ai/troupe/telemetry"
)

// OpenAIClient calls an OpenAI-compatible Chat Completions API through
// openai-go. It retries transient failures itself (the SDK's retries are
// off). It is safe for concurrent use.
type OpenAIClient struct {
	cfg        Config
	hc         *http.Client
	chat       openai.ChatCompletionService
	log        zerolog.Logger
	secret     *redact.Redactor
	openAIHost bool
	span       telemetry.Chat // the chat spans' provider and server
	// keyHost and keyAccount name the provider's quota (with the model):
	// the endpoint's host and a fingerprint of the API key.
	keyHost, keyAccount string
}

var _ Client = (*OpenAIClient)(nil)

// NewClient returns a client for cfg (zero fields take their defaults).
// openai-go's OPENAI_* environment variables are ignored, so cfg always
// wins (the standard proxy variables still apply to the transport), and
// an empty APIKey sends no Authorization header at all (Ollama, llama.cpp
// and vLLM need none).
func NewClient(cfg Config, log zerolog.Logger) (*OpenAIClient, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: newTransport()}
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	key := ratelimit.KeyFor(cfg.BaseURL, cfg.APIKey, cfg.Model)
	return &OpenAIClient{
		keyHost:    key.Host,
		keyAccount: key.Account,
		cfg:        cfg,
		hc:         hc,
		// The chat service alone, not openai.NewClient: NewClient reads
		// OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_ORG_ID and more from the
		// environment, which must not override or add to cfg.
		chat:       openai.NewChatCompletionService(opts...),
		log:        log,
		secret:     redact.New(cfg.Secrets()...),
		openAIHost: isOpenAIHost(cfg.BaseURL),
		span:       chatSpan(cfg.BaseURL),
	}, nil
}

// CloseIdleConnections closes the connections to the model's server that
// no call is using; a later call opens a new one.
func (c *OpenAIClient) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// newTransport is http.DefaultTransport's setup with room for many idle
// connections to one host: hundreds of agents share one provider, and the
// default of 2 idle connections per host would open and close a connection
// for most calls.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 512
	t.MaxIdleConnsPerHost = 256
	t.IdleConnTimeout = 90 * time.Second
	t.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return t
}

// Config returns the client's configuration with defaults applied.
func (c *OpenAIClient) Config() Config { return c.cfg }

// Complete sends req and returns the whole answer, retrying transient
// failures (429, 408, 409, 5xx, network errors, a stream cut before [DONE],
// a malformed chunk) up to MaxAttempts with backoff, honouring Retry-After.
// Permanent failures return an *APIError at once. When ctx ends, Complete
// returns promptly with an error wrapping ctx.Err().
//
// onDelta, if not nil, receives content and reasoning fragments as they
// stream in (never an empty Delta otherwise); without streaming it receives
// the whole answer as one fragment. If an attempt that already
// delivered fragments fails and is retried, onDelta receives one empty
// Delta{} before the next attempt's fragments: a reset marker meaning
// "discard what this call streamed so far". The returned Response always
// holds only the successful attempt's answer.
//
// When the caller's context holds a recording span (tracing is on, see
// package telemetry), the call is a chat span under it, with the model,
// usage and finish reason and never the messages.
func (c *OpenAIClient) Complete(ctx context.Context, req Request, onDelta func(Delta)) (Response, error) {
	model := req.Model
	if model == "" {
		model = c.cfg.Model
	}
	sc := c.span
	sc.Model = model
	ctx, span := telemetry.StartChat(ctx, sc)
	resp, err := c.complete(ctx, model, req, onDelta)
	if span.Recording() {
		span.EndChat(telemetry.ChatEnd{Model: resp.Model, FinishReason: resp.FinishReason, InputTokens: resp.Usage.PromptTokens,
			OutputTokens: resp.Usage.CompletionTokens, CachedTokens: resp.Usage.CachedTokens, Attempts: resp.Attempts},
			err, errorType(ctx, err))
	}
	return resp, err
}

func (c *OpenAIClient) complete(ctx context.Context, model string, req Request, onDelta func(Delta)) (Response, error) {
	p, err := c.buildParams(model, req)
	if err != nil {
		return Response{}, err
	}
	opts := callHeaders(req)
	log := c.log.With().Str("model", model).Str("agent", req.Agent).Logger()
	start := time.Now()
	tokens := reserve(req)
	for attempt := 1; ; attempt++ {
		// Every attempt, retries included, waits its turn with the limiter.
		permit, err := c.waitTurn(ctx, model, req, tokens, attempt)
		if err != nil {
			return Response{Attempts: attempt - 1}, err
		}
		resp, emitted, x, err := c.attempt(ctx, p, opts, c.capsFor(req), permit, onDelta)
		if err == nil {
			c.settle(permit, x, resp, nil, req, attempt)
			return c.finish(resp, model, attempt, start, &log), nil
		}
		err = c.classify(ctx, err)
		c.settle(permit, x, resp, err, req, attempt)
		if ctx.Err() != nil {
			return Response{Attempts: attempt}, fmt.Errorf("llm: complete: %w", ctx.Err())
		}
		retry, retryAfter := isTransient(err)
		if !retry {
			return Response{Attempts: attempt}, c.secret.Error(err)
		}
		if attempt >= c.cfg.MaxAttempts {
			return Response{Attempts: attempt}, c.secret.Error(fmt.Errorf("%w (gave up after %s)", err, plural(attempt, "attempt")))
		}
		wait := c.backoff(attempt, retryAfter)
		var ae *APIError
		if c.cfg.Limiter != nil && errors.As(err, &ae) && refusal(ae.Status) {
			// The refusal froze the key in the limiter: the next attempt
			// waits there (the retry-after, then a jitter of its own).
			wait = 0
		}
		log.Warn().Int("attempt", attempt).Dur("wait", wait).Str("error", c.secret.String(err.Error())).Msg("model call failed; retrying")
		if emitted {
			onDelta(Delta{})
		}
		if err := sleep(ctx, wait); err != nil {
			return Response{Attempts: attempt}, fmt.Errorf("llm: complete: %w", err)
		}
	}
}

// attempt makes one attempt bounded by RequestTimeout.
func (c *OpenAIClient) attempt(ctx context.Context, p openai.ChatCompletionNewParams, opts []option.RequestOption,
	caps caps, permit *ratelimit.Permit, onDelta func(Delta)) (Response, bool, *exchange, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	x := &exchange{stream: c.cfg.Stream, caps: caps}
	if permit != nil {
		x.onHeader = func(h http.Header) { permit.Headers(h) }
	}
	opts = append(slices.Clip(opts), option.WithMiddleware(x.middleware))
	if c.cfg.Stream {
		sctx, stop := context.WithCancelCause(actx)
		defer stop(nil)
		if idle := c.cfg.StreamIdleTimeout; idle > 0 {
			x.idle, x.stall = idle, func() { stop(fmt.Errorf("%w: nothing received for %s", ErrStreamStalled, idle)) }
		}
		resp, emitted, err := c.streamOnce(sctx, p, opts, x, onDelta)
		x.stop()
		if se := c.asStatusError(x, err); se != nil {
			err = se
		} else if cause := context.Cause(sctx); err != nil && ctx.Err() == nil && errors.Is(cause, ErrStreamStalled) {
			err = transient(cause)
		}
		return resp, emitted, x, err
	}
	resp, err := c.completeOnce(actx, p, opts, caps)
	if se := c.asStatusError(x, err); se != nil {
		return resp, false, x, se
	}
	if x.over != nil {
		return Response{}, false, x, x.over
	}
	if err == nil && onDelta != nil && (resp.Message.Content != "" || resp.Message.Reasoning != "") {
		// Not streaming: the whole answer arrives as one fragment, so live
		// output works the same either way.
		onDelta(Delta{Content: resp.Message.Content, Reasoning: resp.Message.Reasoning})
	}
	return resp, false, x, err
}

// finish fills the bookkeeping fields of a successful response.
func (c *OpenAIClient) finish(resp Response, model string, attempts int, start time.Time, log *zerolog.Logger) Response {
	resp.Attempts = attempts
	cost, ok := c.cfg.Pricing.Priced(model, resp.Usage)
	if !ok && resp.Model != "" {
		cost, ok = c.cfg.Pricing.Priced(resp.Model, resp.Usage)
	}
	resp.Cost, resp.Priced, resp.Duration = cost, ok, time.Since(start)
	if resp.Model == "" {
		resp.Model = model
	}
	log.Debug().Int("attempts", attempts).Int("prompt_tokens", resp.Usage.PromptTokens).
		Int("completion_tokens", resp.Usage.CompletionTokens).Int("cached_tokens", resp.Usage.CachedTokens).
		Int("tool_calls", len(resp.Message.ToolCalls)).Float64("cost_usd", cost).
		Dur("latency", time.Since(start)).Str("finish", resp.FinishReason).Msg("model call")
	return resp
}

// callHeaders are the per-call headers identifying the caller.
func callHeaders(req Request) []option.RequestOption {
	opts := make([]option.RequestOption, 0, 4)
	for _, h := range [...]struct{ name, value string }{
		{"X-Troupe-Agent", req.Agent}, {"X-Troupe-Run", req.Run}, {"X-Troupe-Kind", req.Kind},
	} {
		if h.value != "" {
			opts = append(opts, option.WithHeader(h.name, h.value))
		}
	}
	return opts
}

// plural renders "1 attempt", "3 attempts".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
