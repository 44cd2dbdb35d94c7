package convo

import (
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
)

// evictConv: window 1000 tokens at 4 chars/token, a 100-char task, rounds 1
// and 2 of 2000 chars (results of 1939) and rounds 3..6 of 200 chars
// (results of 139): 4900 chars. Round 2 crosses 80 % (4100 chars = 1025
// tokens), so the 148-char warning "~102% used (1025/1000 tokens)" plus a
// blank line goes on its result: 5050 chars = 1262.5 -> 1263 tokens.
func evictConv(t *testing.T, cfg Config) *Conversation {
	cfg.Window, cfg.CharsPerToken = 1000, 4
	c := newConv(t, cfg)
	if err := c.AppendTask(strings.Repeat("t", 92)); err != nil {
		t.Fatal(err)
	}
	for r := 1; r <= 6; r++ {
		n := 139
		if r <= 2 {
			n = 1939
		}
		readRound(t, c, r, n)
	}
	if c.Chars() != 5050 {
		t.Fatalf("setup: %d chars, want 5050", c.Chars())
	}
	return c
}

func TestEvictOldestFirstAndStopsBelowThreshold(t *testing.T) {
	t.Parallel()
	c := evictConv(t, Config{})
	// Clearing round 1 frees 1939 - 53 chars: 3164 chars = 791 tokens < 800.
	ev := c.Evict()
	if ev != (Eviction{Count: 1, CharsFreed: 1886, EstimateBefore: 1263, EstimateAfter: 791}) {
		t.Fatalf("Evict = %+v", ev)
	}
	es := c.Entries()
	r1, r2 := es[2], es[4]
	wantLine := "[Cleared: read_file(path=a.go) — 1939 chars, round 1]"
	if r1.Message.Content != wantLine || !r1.Cleared || r1.ClearedChars != 1939 {
		t.Errorf("round 1 result = %q cleared=%v chars=%d, want %q", r1.Message.Content, r1.Cleared, r1.ClearedChars, wantLine)
	}
	if r1.Message.ToolCallID != "call_1" || r1.Tool != "read_file" || r1.Args != "path=a.go" {
		t.Errorf("round 1 result lost its identity: %+v", r1)
	}
	if r2.Cleared || !strings.HasPrefix(r2.Message.Content, strings.Repeat("x", 1939)+"\n\n[Context budget:") {
		t.Errorf("round 2 was cleared although round 1 was enough")
	}
	if err := ValidatePairs(c.Messages()); err != nil {
		t.Errorf("after eviction: %v", err)
	}
	// Under the threshold now: nothing more to do.
	if ev := c.Evict(); ev.Count != 0 || ev.EstimateBefore != 791 {
		t.Errorf("second Evict = %+v, want nothing", ev)
	}
}

func TestEvictRespectsMinAge(t *testing.T) {
	t.Parallel()
	// Latest round 6: with MinAge 6 no result is old enough; with MinAge 5
	// round 1 is, and clearing it is enough.
	c := evictConv(t, Config{MinAge: 6})
	if ev := c.Evict(); ev.Count != 0 || ev.EstimateAfter != 1263 {
		t.Errorf("MinAge 6: Evict = %+v, want nothing cleared", ev)
	}
	c = evictConv(t, Config{MinAge: 5})
	if ev := c.Evict(); ev.Count != 1 {
		t.Errorf("MinAge 5: Evict = %+v, want round 1 cleared", ev)
	}
}

func TestEvictSkipsProtectedTools(t *testing.T) {
	t.Parallel()
	c := newConv(t, Config{Window: 1000, CharsPerToken: 4, Protected: []string{"todo", "submit_plan"}})
	if err := c.AppendTask(strings.Repeat("t", 92)); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 1939)
	addRound(t, c, 1, []messages.ToolCall{call("p1", "todo", `{"items":[]}`)}, []string{big})
	addRound(t, c, 2, []messages.ToolCall{call("p2", "submit_plan", `{"plan":"x"}`)}, []string{big})
	addRound(t, c, 3, []messages.ToolCall{call("g1", "grep", `{"pattern":"TODO","path":"src"}`)}, []string{big})
	for r := 4; r <= 6; r++ {
		readRound(t, c, r, 10)
	}
	ev := c.Evict()
	es := c.Entries()
	for _, i := range []int{2, 4} {
		if es[i].Cleared {
			t.Errorf("protected %s result was cleared", es[i].Tool)
		}
	}
	want := "[Cleared: grep(path=src, pattern=TODO) — 1939 chars, round 3]"
	if es[6].Message.Content != want {
		t.Errorf("grep result = %q, want %q", es[6].Message.Content, want)
	}
	if ev.Count != 1 {
		t.Errorf("Evict = %+v, want 1 cleared", ev)
	}
}

func TestEvictParallelCallsAndPinned(t *testing.T) {
	t.Parallel()
	c := newConv(t, Config{Window: 500, CharsPerToken: 4, MinAge: 1})
	if err := c.AppendTask(strings.Repeat("t", 2000)); err != nil { // pinned, 2008 chars, alone > 80 %
		t.Fatal(err)
	}
	calls := []messages.ToolCall{call("a", "grep", `{"pattern":"x"}`), call("b", "read_file", `{"path":"b.go"}`)}
	addRound(t, c, 1, calls, []string{"aaaa", "bbbb"})
	readRound(t, c, 2, 5)
	ev := c.Evict()
	es := c.Entries()
	if es[0].Message.Content != strings.Repeat("t", 2000) {
		t.Error("the pinned task was changed")
	}
	// Only round 1 is old enough (MinAge 1, latest round 2). Result a (4
	// chars) is shorter than its note and stays; result b goes. It is still
	// over: no error, just as small as allowed.
	if ev.Count != 1 || es[2].Cleared || !es[3].Cleared || es[5].Cleared {
		t.Errorf("Evict = %+v; cleared: %v %v %v", ev, es[2].Cleared, es[3].Cleared, es[5].Cleared)
	}
	// Round 1 took the conversation to 2008 + 53 + 17 + 22 = 2100 chars =
	// 525 tokens: the warning "~105% used (525/500 tokens)" (146 chars) and
	// a blank line went on result b: 4 + 2 + 146 = 152 chars cleared,
	// replaced by a 52-char line.
	want := "[Cleared: read_file(path=b.go) — 152 chars, round 1]"
	if es[3].Message.Content != want || ev.CharsFreed != 152-52 {
		t.Errorf("cleared line %q, freed %d; want %q, 100", es[3].Message.Content, ev.CharsFreed, want)
	}
	if again := c.Evict(); again.Count != 0 {
		t.Errorf("cleared results were cleared again: %+v", again)
	}
}

func TestArgsSummary(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("d/", 40) + "f.go"
	tests := []struct{ args, want string }{
		{`{"path":"src/main.go","offset":10,"limit":50}`, "path=src/main.go, offset=10, limit=50"},
		{`{"pattern":"func New","path":"internal","mode":"files"}`, "path=internal, pattern=func New, mode=files"},
		{`{"command":"go test ./...\n   -race"}`, "command=go test ./... -race"},
		{`{"path":"` + long + `"}`, "path=" + long[:54] + "…"},
		{`{"b":1,"a":"x","c":true}`, "a=x, b=1"},
		{`{"paths":["a.go","b.go"]}`, "paths=[a.go b.go]"},
		{`{"opts":{"x":1}}`, ""},
		{`{}`, ""},
		{`not json at all`, "not json at all"},
		{``, ""},
		{`{"path":"ü` + strings.Repeat("ö", 70) + `"}`, "path=ü" + strings.Repeat("ö", 53) + "…"},
	}
	for _, tt := range tests {
		got := ArgsSummary([]byte(tt.args))
		if got != tt.want {
			t.Errorf("ArgsSummary(%s) = %q, want %q", tt.args, got, tt.want)
		}
		if n := len([]rune(got)); n > ArgsSummaryMax {
			t.Errorf("ArgsSummary(%s) is %d runes, over %d", tt.args, n, ArgsSummaryMax)
		}
	}
}

func TestAppendErrorsLoseNothing(t *testing.T) {
	t.Parallel()
	c := newConv(t, Config{Window: 1000})
	if err := c.AppendTask("task"); err != nil {
		t.Fatal(err)
	}
	if err := c.AppendAssistant(1, assistantWith(call("a", "grep", `{}`), call("a", "ls", `{}`))); err == nil ||
		!strings.Contains(err.Error(), `"a" appears twice`) {
		t.Errorf("duplicate call ids: err = %v", err)
	}
	if err := c.AppendAssistant(1, assistantWith(messages.ToolCall{Name: "grep"})); err == nil || !strings.Contains(err.Error(), "no id") {
		t.Errorf("call without id: err = %v", err)
	}
	if err := c.AppendAssistant(1, llm.Message{Role: llm.RoleUser}); err == nil {
		t.Error("AppendAssistant accepted a user message")
	}
	if err := c.AppendAssistant(2, assistantWith(call("a", "grep", `{}`), call("b", "ls", `{}`))); err != nil {
		t.Fatal(err)
	}
	before := c.Len()
	if _, err := c.AppendToolResults([]ToolResult{{CallID: "a", Content: "ok"}, {CallID: "zz", Content: "?"}}); err == nil ||
		!strings.Contains(err.Error(), `"zz"`) || !strings.Contains(err.Error(), "a grep, b ls") {
		t.Errorf("unknown call id: err = %v", err)
	}
	if _, err := c.AppendToolResults([]ToolResult{{CallID: "a"}, {CallID: "a"}}); err == nil {
		t.Error("a call answered twice in one batch was accepted")
	}
	if c.Len() != before {
		t.Fatalf("a refused batch appended %d messages", c.Len()-before)
	}
	if err := c.AppendUser(2, "hi"); err == nil || !strings.Contains(err.Error(), "waiting for results") {
		t.Errorf("user message while calls pend: err = %v", err)
	}
	if _, err := c.AppendToolResults([]ToolResult{{CallID: "b", Content: "1"}}); err != nil {
		t.Fatal(err)
	}
	if p := c.Pending(); len(p) != 1 || p[0].ID != "a" {
		t.Fatalf("Pending = %v, want [a]", p)
	}
	if _, err := c.AppendToolResults([]ToolResult{{CallID: "a", Content: "2"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.AppendUser(1, "late"); err == nil || !strings.Contains(err.Error(), "round 1 is before") {
		t.Errorf("going back a round: err = %v", err)
	}
	if err := ValidatePairs(c.Messages()); err != nil {
		t.Errorf("conversation invalid after refused appends: %v", err)
	}
}
