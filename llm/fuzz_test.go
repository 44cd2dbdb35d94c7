package llm

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// FuzzToolCallArgs: whatever a model writes as arguments, the message
// marshals, and sent back in history the model sees its own (trimmed) text.
func FuzzToolCallArgs(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":`, `"str"`, `  [1,2] `, ``, `null`, "\xff\xfe", `"unterminated`, `{"k":"\u00e9"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		calls := toolCalls([]assembledCall{{id: "c1", name: "grep", args: args}})
		if len(calls) != 1 {
			t.Fatalf("%d calls", len(calls))
		}
		if !json.Valid(calls[0].Args) {
			t.Fatalf("args %q stored as invalid JSON %q", args, calls[0].Args)
		}
		if _, err := json.Marshal(Message{Role: RoleAssistant, ToolCalls: calls}); err != nil {
			t.Fatalf("message does not marshal: %v", err)
		}
		p, err := toParam(Message{Role: RoleAssistant, ToolCalls: []messages.ToolCall{calls[0]}})
		if err != nil {
			t.Fatal(err)
		}
		back := p.OfAssistant.ToolCalls[0].OfFunction.Function.Arguments
		want := strings.TrimSpace(args)
		if want == "" {
			want = "{}"
		}
		// json.Marshal replaces invalid UTF-8 with U+FFFD; only then may the
		// text differ, exactly as a JSON round trip of the text does.
		if back != want && back != jsonRoundTrip(t, want) {
			t.Fatalf("sent back %q, model wrote %q", back, want)
		}
	})
}

// FuzzParseRetryAfter: any header value gives a wait in [0, 1e6 s).
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"3", "0.5", "-1", "1e300", "NaN", "Inf", "Wed, 21 Oct 2015 07:28:00 GMT", ""} {
		f.Add(s, s)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, seconds, ms string) {
		h := http.Header{}
		h.Set("Retry-After", seconds)
		h.Set("Retry-After-Ms", ms)
		d := parseRetryAfter(h, now)
		if d < 0 || d >= 1e6*time.Second {
			t.Fatalf("Retry-After %q / ms %q gave %v", seconds, ms, d)
		}
	})
}

func jsonRoundTrip(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
