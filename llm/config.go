package llm

import (
	"fmt"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/ratelimit"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults applied by NewClient to zero fields of a Config.
const (
	DefaultBaseURL        = "https://api.openai.com/v1"
	DefaultMaxAttempts    = 4
	DefaultInitialBackoff = 500 * time.Millisecond
	DefaultMaxBackoff     = 20 * time.Second
	DefaultMaxRetryAfter  = 60 * time.Second
	DefaultRequestTimeout = 5 * time.Minute
	DefaultContextWindow  = 128000
)

// Config configures an OpenAIClient. It is a value filled by the config
// layer (flags, environment and files are read there, never here).
type Config struct {
	// BaseURL is the API root, e.g. https://openrouter.ai/api/v1 or
	// http://127.0.0.1:11434/v1; empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token when not empty (local servers need
	// none). It never appears in logs or errors.
	APIKey string
	// Model is the default model, used when a Request names none.
	Model string
	// Stream selects streaming responses. The zero Config does not stream;
	// DefaultConfig and configs/default.yaml do.
	Stream bool
	// MaxAttempts bounds the attempts of one call (first try included);
	// 0 means DefaultMaxAttempts.
	MaxAttempts int
	// InitialBackoff and MaxBackoff shape the exponential backoff with full
	// jitter between attempts; 0 means the defaults.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// MaxRetryAfter caps a provider's Retry-After; a Retry-After above
	// MaxBackoff is honoured up to this cap. 0 means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// RequestTimeout bounds one attempt, including reading the stream;
	// 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// StreamIdleTimeout cuts a stream that has begun and then sends nothing
	// for this long; the attempt is retried. 0 means no idle limit
	// (RequestTimeout still bounds the attempt).
	StreamIdleTimeout time.Duration
	// MaxTextBytes caps an answer's text and reasoning, and
	// MaxToolCallBytes each of its tool calls' arguments; an answer past
	// either is refused (ErrOverLimit) as soon as it passes, without
	// reading the rest. 0 means DefaultMaxTextBytes and
	// DefaultMaxToolCallBytes.
	MaxTextBytes     int64
	MaxToolCallBytes int64
	// Limiter, when set, is the process's share of the hub's provider
	// quotas: every attempt of every call waits its turn there, and a
	// 429, 529 or 503 freezes the key for every agent of the hub.
	Limiter *ratelimit.Limiter
	// RateLimits are the limits configured per model (model.rate_limit),
	// for providers that send no x-ratelimit-* headers.
	RateLimits map[string]messages.RateLimits
	// Headers are extra request headers, e.g. OpenRouter's HTTP-Referer
	// and X-Title.
	Headers map[string]string
	// ContextWindows maps a model to its context window in tokens.
	ContextWindows map[string]int
	// Pricing maps a model to its price; Response.Cost comes from it.
	Pricing Pricing
	// HTTPClient, when set, carries the requests (proxies, custom TLS);
	// nil uses a client of our own.
	HTTPClient *http.Client
}

// DefaultConfig returns a Config with streaming on and every default set;
// fill in BaseURL, APIKey and Model.
func DefaultConfig() Config {
	return Config{
		BaseURL:          DefaultBaseURL,
		Stream:           true,
		MaxAttempts:      DefaultMaxAttempts,
		InitialBackoff:   DefaultInitialBackoff,
		MaxBackoff:       DefaultMaxBackoff,
		MaxRetryAfter:    DefaultMaxRetryAfter,
		RequestTimeout:   DefaultRequestTimeout,
		MaxTextBytes:     DefaultMaxTextBytes,
		MaxToolCallBytes: DefaultMaxToolCallBytes,
	}
}

// ContextWindow is the context window of model in tokens:
// ContextWindows[model], else DefaultContextWindow.
func (c Config) ContextWindow(model string) int {
	if n, ok := c.ContextWindows[model]; ok && n > 0 {
		return n
	}
	return DefaultContextWindow
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.InitialBackoff == 0 {
		c.InitialBackoff = DefaultInitialBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.MaxRetryAfter == 0 {
		c.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.MaxTextBytes == 0 {
		c.MaxTextBytes = DefaultMaxTextBytes
	}
	if c.MaxToolCallBytes == 0 {
		c.MaxToolCallBytes = DefaultMaxToolCallBytes
	}
	return c
}

// Validate reports the first problem of c (after defaults), naming the field.
func (c Config) Validate() error {
	c = c.withDefaults()
	u, err := url.Parse(c.BaseURL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("llm config: base_url %q: want an http(s) URL such as https://api.openai.com/v1", redactURL(c.BaseURL))
	case strings.TrimSpace(c.Model) == "":
		return fmt.Errorf("llm config: model: empty; set the default model (--model or TROUPE_MODEL)")
	case c.MaxAttempts < 1:
		return fmt.Errorf("llm config: max_attempts: must be at least 1, got %d", c.MaxAttempts)
	case c.InitialBackoff < 0 || c.MaxBackoff < 0 || c.MaxRetryAfter < 0:
		return fmt.Errorf("llm config: backoff durations must not be negative")
	case c.InitialBackoff > c.MaxBackoff:
		return fmt.Errorf("llm config: initial_backoff %s exceeds max_backoff %s", c.InitialBackoff, c.MaxBackoff)
	case c.RequestTimeout < 0:
		return fmt.Errorf("llm config: request_timeout: negative")
	case c.StreamIdleTimeout < 0:
		return fmt.Errorf("llm config: stream_idle_timeout: negative")
	case c.MaxTextBytes < 0 || c.MaxToolCallBytes < 0:
		return fmt.Errorf("llm config: max_response_bytes: negative")
	}
	if strings.ContainsFunc(c.APIKey, badHeaderRune) || strings.Contains(c.APIKey, " ") {
		return fmt.Errorf("llm config: api_key contains spaces or control characters (a trailing newline from a file?)")
	}
	for k, v := range c.Headers {
		if k == "" || strings.ContainsAny(k, " :") || strings.ContainsFunc(k, badHeaderRune) {
			return fmt.Errorf("llm config: headers: invalid header name %q", k)
		}
		if strings.ContainsFunc(v, badHeaderRune) {
			return fmt.Errorf("llm config: headers.%s: value contains control characters", k)
		}
		if strings.EqualFold(k, "Authorization") {
			return fmt.Errorf("llm config: headers: set the API key with api_key, not an Authorization header")
		}
	}
	for m, n := range c.ContextWindows {
		if n <= 0 {
			return fmt.Errorf("llm config: context_windows.%s: must be positive, got %d", m, n)
		}
	}
	return c.Pricing.Validate()
}

// badHeaderRune reports a character that cannot appear in a header.
func badHeaderRune(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }

// redactURL drops the user info and query of a URL, where keys hide.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	u.RawQuery = ""
	return u.String()
}
