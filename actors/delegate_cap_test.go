package actors_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// A child's result is capped once, by result_cap, on a character
// boundary with one notice: delegate has no output cap of its own, so a
// cap above the executor's usual tool caps is what the parent sees.
func TestDelegateResultIsCappedOnce(t *testing.T) {
	t.Parallel()
	answer := strings.Repeat("Findings: cache.go:12 — the key omits the user ID. ", 800) // about 42 KB
	for _, resultCap := range []int{0, 30_000} {
		t.Run(fmt.Sprint(resultCap), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(script(
				kind("root", calls(delegate("explore", "why stale?", false)), say("done")),
				kind("explore", say(answer))))
			defer srv.Close()
			o := options(t, srv, workspace(t, nil), "why stale?", &actors.Recorder{})
			o.Settings = noPlan()
			o.Settings.ResultCap = resultCap
			if res := run(t, o); res.Text != "done" {
				t.Fatalf("root: %+v", res.AgentResult)
			}
			roots := requestsOf(srv, "root")
			var result string
			for _, m := range roots[len(roots)-1].Messages {
				if m.Role == "tool" {
					result = m.Content
				}
			}
			want := resultCap
			if want == 0 {
				want = 4000 // the default result_cap
			}
			text, notice, ok := strings.Cut(result, "\n[result truncated: ")
			head := text[strings.Index(text, "Findings"):]
			if !ok || strings.Count(result, "truncated") != 1 || !utf8.ValidString(result) {
				t.Fatalf("the parent saw %d bytes, one notice %v: ...%s", len(result), ok, result[max(0, len(result)-300):])
			}
			if len(head) > want || len(head) < want-len("— ") || !strings.Contains(notice, fmt.Sprintf("of %d chars", len(answer))) {
				t.Errorf("kept %d bytes of %d (cap %d); notice %q", len(head), len(answer), want, notice)
			}
		})
	}
}
