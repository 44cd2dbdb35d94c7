package llm

import (
	"encoding/json"
	"errors"
	"github.com/troupe-ai/troupe/internal/redact"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/rs/zerolog"
)

func testClient(t *testing.T, cfg Config) *OpenAIClient {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "m"
	}
	c, err := NewClient(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBackoffFullJitterBounds(t *testing.T) {
	t.Parallel()
	c := testClient(t, Config{InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, MaxRetryAfter: 30 * time.Second})
	for attempt, ceiling := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond,
		3: 400 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 50: time.Second} {
		var sawLow, sawHigh bool
		for range 2000 {
			d := c.backoff(attempt, 0)
			if d < 0 || d > ceiling {
				t.Fatalf("attempt %d: backoff %v outside [0, %v]", attempt, d, ceiling)
			}
			sawLow = sawLow || d < ceiling/4
			sawHigh = sawHigh || d > ceiling*3/4
		}
		// Full jitter spreads over the whole range (2000 draws make missing
		// either quarter a 1-in-10^249 event).
		if !sawLow || !sawHigh {
			t.Errorf("attempt %d: draws not spread over [0, %v]", attempt, ceiling)
		}
	}
	if d := c.backoff(1, 5*time.Second); d != 5*time.Second {
		t.Errorf("Retry-After above MaxBackoff: waited %v, want 5s", d)
	}
	if d := c.backoff(1, time.Hour); d != 30*time.Second {
		t.Errorf("Retry-After above MaxRetryAfter: waited %v, want the 30s cap", d)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name string
		h    map[string]string
		want time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{"ms wins", map[string]string{"Retry-After": "3", "Retry-After-Ms": "250"}, 250 * time.Millisecond},
		{"ms lower case", map[string]string{"retry-after-ms": "40"}, 40 * time.Millisecond},
		{"http date", map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"negative", map[string]string{"Retry-After": "-4"}, 0},
		{"bad ms falls back", map[string]string{"Retry-After-Ms": "x", "Retry-After": "2"}, 2 * time.Second},
		{"absurd", map[string]string{"Retry-After": "1e300"}, 0},
	}
	for _, tc := range cases {
		h := http.Header{}
		for k, v := range tc.h {
			h.Set(k, v)
		}
		if got := parseRetryAfter(h, now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDoneWatcher(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		body      string
		done, eof bool
	}{
		{"done", "data: {\"a\":1}\n\ndata: [DONE]\n\n", true, true},
		{"done no space crlf", "data: {}\r\n\r\ndata:[DONE]\r\n\r\n", true, true},
		{"done at eof without newline", "data: {}\n\ndata: [DONE]", true, true},
		{"cut", "data: {\"a\":1}\n\n", false, true},
		{"done inside content is not the end", "data: {\"content\":\"data: [DONE]\"}\n\n", false, true},
	}
	for _, tc := range cases {
		// One byte per read: the marker is split across reads.
		w := &doneWatcher{inBody: io.NopCloser(iotest.OneByteReader(strings.NewReader(tc.body)))}
		got, err := io.ReadAll(w)
		if err != nil || string(got) != tc.body {
			t.Fatalf("%s: read %q, %v", tc.name, got, err)
		}
		if w.done != tc.done || w.eof != tc.eof {
			t.Errorf("%s: done=%v eof=%v, want %v %v", tc.name, w.done, w.eof, tc.done, tc.eof)
		}
	}
}

func chunk(t *testing.T, js string) *openai.ChatCompletionChunk {
	t.Helper()
	var ch openai.ChatCompletionChunk
	if err := json.Unmarshal([]byte(js), &ch); err != nil {
		t.Fatal(err)
	}
	return &ch
}

func TestAssemblerToolCallShapes(t *testing.T) {
	t.Parallel()
	var a assembler
	for _, js := range []string{
		// A server that sends every call whole at index 0 (no index).
		`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"id":"c1","type":"function","function":{"name":"grep","arguments":"{\"p\":1}"}}]}}]}`,
		`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"id":"c2","type":"function","function":{"name":"ls","arguments":"{}"}}]}}]}`,
		// Interleaved fragments of calls at indexes 1 and 2, ids varying per chunk id.
		`{"id":"y","choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"c4","function":{"name":"b","arguments":"{\"x\""}}]}}]}`,
		`{"id":"z","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c3","function":{"name":"a","arguments":"{"}}]}}]}`,
		`{"id":"z","choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"function":{"arguments":":2}"}},{"index":1,"function":{"arguments":"}"}}]}}]}`,
		// A fragment that never gets a name is dropped.
		`{"id":"z","choices":[{"index":0,"delta":{"tool_calls":[{"index":7,"function":{"arguments":"junk"}}]},"finish_reason":"tool_calls"}]}`,
	} {
		a.add(chunk(t, js))
	}
	calls := toolCalls(a.finishedCalls())
	var got []string
	for _, c := range calls {
		got = append(got, c.ID+":"+c.Name+":"+string(c.Args))
	}
	want := `c1:grep:{"p":1} c2:ls:{} c3:a:{} c4:b:{"x":2}`
	if strings.Join(got, " ") != want {
		t.Errorf("calls = %v\nwant    %v", got, want)
	}
	if a.finish != "tool_calls" {
		t.Errorf("finish = %q", a.finish)
	}
}

func TestReasoningOf(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		`{"content":"x","reasoning_content":"deep"}`: "deep",
		`{"reasoning":"router"}`:                     "router",
		`{"reasoning":{"effort":"high"}}`:            "",
		`{"reasoning_content":null}`:                 "",
		``:                                           "",
	} {
		if got := reasoningOf(raw); got != want {
			t.Errorf("reasoningOf(%s) = %q, want %q", raw, got, want)
		}
	}
}

func TestSecretsScrubbedKeepingChain(t *testing.T) {
	t.Parallel()
	cfg := Config{APIKey: "sk-abcdefgh", BaseURL: "http://u:hunter2hunter2@localhost:1/v1",
		Headers: map[string]string{"api-key": "azure-key-123", "HTTP-Referer": "https://example.com/app"}}
	r := redact.New(cfg.Secrets()...)
	base := &APIError{Status: 401, Message: "bad key sk-abcdefgh"}
	err := r.Error(base)
	var got *APIError
	if !errors.As(err, &got) || got != base || strings.Contains(err.Error(), "sk-abcdefgh") {
		t.Errorf("wrap: %v", err)
	}
	if s := r.String("azure-key-123 hunter2hunter2 https://example.com/app"); s != "[redacted] [redacted] https://example.com/app" {
		t.Errorf("scrubbed %q", s)
	}
}

func TestUsageOf(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]Usage{
		`{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105,"prompt_tokens_details":{"cached_tokens":60}}`: {100, 5, 60},
		// DeepSeek reports its cache hits in its own field.
		`{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105,"prompt_cache_hit_tokens":70,"prompt_cache_miss_tokens":30}`: {100, 5, 70},
		`{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}`:                                                               {9, 1, 0},
	} {
		var u openai.CompletionUsage
		if err := json.Unmarshal([]byte(raw), &u); err != nil {
			t.Fatal(err)
		}
		if got := usageOf(u); got != want {
			t.Errorf("usageOf(%s) = %+v, want %+v", raw, got, want)
		}
	}
}
