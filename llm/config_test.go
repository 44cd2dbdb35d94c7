package llm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/llm"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	ok := llm.Config{BaseURL: "http://127.0.0.1:11434/v1", Model: "qwen"}
	cases := []struct {
		name string
		edit func(*llm.Config)
		want string // "" = valid
	}{
		{"minimal local", func(*llm.Config) {}, ""},
		{"defaults fill the rest", func(c *llm.Config) { c.BaseURL = "" }, ""},
		{"no model", func(c *llm.Config) { c.Model = " " }, "model: empty"},
		{"bad scheme", func(c *llm.Config) { c.BaseURL = "ftp://x/v1" }, "base_url"},
		{"no host", func(c *llm.Config) { c.BaseURL = "http:///v1" }, "base_url"},
		{"secret in url hidden", func(c *llm.Config) { c.BaseURL = "ftp://user:pw@x/v1?key=sk-123" }, `base_url "ftp://x/v1"`},
		{"attempts", func(c *llm.Config) { c.MaxAttempts = -1 }, "max_attempts: must be at least 1"},
		{"negative backoff", func(c *llm.Config) { c.InitialBackoff = -time.Second }, "must not be negative"},
		{"backoff order", func(c *llm.Config) { c.InitialBackoff = time.Minute; c.MaxBackoff = time.Second }, "initial_backoff 1m0s exceeds max_backoff 1s"},
		{"timeout", func(c *llm.Config) { c.RequestTimeout = -1 }, "request_timeout: negative"},
		{"header name", func(c *llm.Config) { c.Headers = map[string]string{"X Bad": "v"} }, `invalid header name "X Bad"`},
		{"authorization header", func(c *llm.Config) { c.Headers = map[string]string{"authorization": "Bearer x"} }, "not an Authorization header"},
		{"key with newline", func(c *llm.Config) { c.APIKey = "sk-abc\n" }, "api_key contains spaces or control characters"},
		{"key with space", func(c *llm.Config) { c.APIKey = "Bearer sk-abc" }, "api_key contains spaces"},
		{"header value", func(c *llm.Config) { c.Headers = map[string]string{"X-Title": "a\r\nInjected: 1"} }, "headers.X-Title: value contains control characters"},
		{"window", func(c *llm.Config) { c.ContextWindows = map[string]int{"qwen": 0} }, "context_windows.qwen: must be positive"},
		{"price", func(c *llm.Config) { c.Pricing = llm.Pricing{"qwen": {Input: -1}} }, "pricing.qwen: negative price"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := ok
			tc.edit(&cfg)
			err := cfg.Validate()
			if tc.want == "" {
				if err != nil {
					t.Errorf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "sk-123") {
				t.Errorf("error shows the URL's secret: %v", err)
			}
			if _, nerr := llm.NewClient(cfg, noLog); nerr == nil {
				t.Error("NewClient accepted an invalid config")
			}
		})
	}
}

func TestDefaultsApplied(t *testing.T) {
	t.Parallel()
	c, err := llm.NewClient(llm.Config{Model: "m"}, noLog)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Config()
	if got.BaseURL != llm.DefaultBaseURL || got.MaxAttempts != llm.DefaultMaxAttempts || got.RequestTimeout != llm.DefaultRequestTimeout ||
		got.InitialBackoff != llm.DefaultInitialBackoff || got.MaxBackoff != llm.DefaultMaxBackoff || got.MaxRetryAfter != llm.DefaultMaxRetryAfter {
		t.Errorf("defaults not applied: %+v", got)
	}
	if got.Stream {
		t.Error("zero Config streams; only DefaultConfig turns streaming on")
	}
	if !llm.DefaultConfig().Stream {
		t.Error("DefaultConfig does not stream")
	}
}

func TestContextWindow(t *testing.T) {
	t.Parallel()
	cfg := llm.Config{ContextWindows: map[string]int{"small": 8192, "broken": -5}}
	for model, want := range map[string]int{"small": 8192, "unknown": llm.DefaultContextWindow, "broken": llm.DefaultContextWindow} {
		if got := cfg.ContextWindow(model); got != want {
			t.Errorf("ContextWindow(%q) = %d, want %d", model, got, want)
		}
	}
}
