package llmtest_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// FuzzParseScript: any input gives a valid script or an error, never a
// panic, and a parsed script survives a JSON round trip.
func FuzzParseScript(f *testing.F) {
	if b, err := os.ReadFile("testdata/script.json"); err == nil {
		f.Add(b)
	}
	for _, s := range []string{`{}`, `{"agents":[{"match":{"fallback":true},"turns":[{"latency":1e300}]}]}`,
		`{"agents":[{"match":{"kind":"x"},"turns":[{"fail":{"kind":"drop","after_chunks":-1}}]}]}`,
		`{"agents":[{"match":{"kind":"x"},"repeat":true,"turns":[{"tool_calls":[{"name":"a","raw_args":"{"}]}]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := llmtest.ParseScript(data)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("parsed script fails validation: %v", err)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("parsed script does not marshal: %v", err)
		}
		if _, err := llmtest.ParseScript(b); err != nil {
			t.Fatalf("round trip: %v\n%s", err, b)
		}
	})
}
