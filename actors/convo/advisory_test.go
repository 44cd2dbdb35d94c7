package convo

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// advisoryConv is the scenario of the advisory tests: window 1000 tokens at
// 4 chars per token; 39 fixed chars + a 100-char task = 139 chars; each
// readRound(…, 739) adds 38 + 762 = 800 chars (200 tokens).
func advisoryConv(t *testing.T, margin float64) *Conversation {
	c := newConv(t, Config{Window: 1000, CharsPerToken: 4, FixedChars: 39, RearmMargin: margin})
	if err := c.AppendSystem(""); err != nil { // an empty system prompt: 8 chars...
		t.Fatal(err)
	}
	// ...so the task is 92 - 8 = 84 runes: 8 + 84 + 8 = 100 chars with the system prompt.
	if err := c.AppendTask(strings.Repeat("t", 84)); err != nil {
		t.Fatal(err)
	}
	if c.Chars() != 139 {
		t.Fatalf("setup: Chars = %d, want 139", c.Chars())
	}
	return c
}

func TestAdvisoriesFireOncePerCrossing(t *testing.T) {
	t.Parallel()
	c := advisoryConv(t, 0.05)
	// Round 1: 939 chars = 235 tokens; round 2: 1739 = 435 tokens.
	for r := 1; r <= 2; r++ {
		if adv := readRound(t, c, r, 739); adv.Level != NoAdvisory {
			t.Fatalf("round %d: advisory %v at %d tokens, want none", r, adv.Level, c.Estimate())
		}
	}
	// Round 3: 2539 chars = 634.75 -> 635 tokens, 63 %.
	adv := readRound(t, c, 3, 739)
	want3 := "[Context budget: ~63% of the context window used (635/1000 tokens). Prefer targeted reads (offset/limit, grep in files mode) over whole files.]"
	if adv.Level != AdvisoryAdvise || adv.Text != want3 || adv.Percent != 63 || adv.Used != 635 || adv.Window != 1000 {
		t.Fatalf("round 3 advisory = %+v, want level advise with %q", adv, want3)
	}
	last := c.Entries()[c.Len()-1].Message.Content
	if !strings.HasSuffix(last, "\n\n"+want3) || !strings.HasPrefix(last, "xxx") {
		t.Fatalf("round 3 result does not end with the advisory: %q", last[len(last)-160:])
	}
	// Round 4: 3339 + 2 + 143 (the advisory) = 3484 chars = 871 tokens.
	adv = readRound(t, c, 4, 739)
	want4 := "[Context budget: ~87% used (871/1000 tokens). Older tool results will be cleared soon: note what you need, and finish or summarize your progress.]"
	if adv.Level != AdvisoryWarn || adv.Text != want4 {
		t.Fatalf("round 4 advisory = %+v, want level warn with %q", adv, want4)
	}

	// The warning (146 chars + 2 for the blank line) went on round 4's
	// result: 3632 chars = 908 tokens. Eviction clears round 1 (the only
	// one 3 rounds old): its 739 chars become the 52-rune cleared line,
	// 3632 - 687 = 2945 chars = 736.25 -> 737 tokens, below 80 %: it stops.
	ev := c.Evict()
	if ev != (Eviction{Count: 1, CharsFreed: 687, EstimateBefore: 908, EstimateAfter: 737}) {
		t.Fatalf("Evict = %+v", ev)
	}
	// 73.7 % is below 80 % - 5 %: the warning is re-armed; the 60 % advisory
	// (re-armed only below 55 %) is not. Round 5: 3745 chars = 937 tokens.
	adv = readRound(t, c, 5, 739)
	want5 := "[Context budget: ~93% used (937/1000 tokens). Older tool results will be cleared soon: note what you need, and finish or summarize your progress.]"
	if adv.Level != AdvisoryWarn || adv.Text != want5 {
		t.Fatalf("round 5 advisory = %+v, want level warn with %q", adv, want5)
	}
	// Still above both thresholds: nothing more fires.
	for r := 6; r <= 7; r++ {
		if adv := readRound(t, c, r, 739); adv.Level != NoAdvisory {
			t.Fatalf("round %d: advisory %+v, want none (already fired)", r, adv)
		}
	}
}

func TestAdvisoryNotRearmedWithoutDrop(t *testing.T) {
	t.Parallel()
	c := advisoryConv(t, 0) // default margin 0.1: warn re-arms below 70 %
	for r := 1; r <= 4; r++ {
		readRound(t, c, r, 739)
	}
	// The warning has fired at 871 tokens (908 with its text). Eviction
	// brings it to 737 tokens (73.7 %), not below 70 %: round 5 crosses
	// 80 % again without a new notice.
	c.Evict()
	if adv := readRound(t, c, 5, 739); adv.Level != NoAdvisory {
		t.Fatalf("round 5 advisory %+v, want none (not re-armed)", adv)
	}
}

func TestAdvisoryBothThresholdsAtOnce(t *testing.T) {
	t.Parallel()
	// Window 100 tokens at 4 chars/token: the task is 100 chars = 25 tokens,
	// then one round of 38 + 23 + 239 = 300 chars makes 400 chars = 100 %.
	c := newConv(t, Config{Window: 100, CharsPerToken: 4})
	if err := c.AppendTask(strings.Repeat("t", 92)); err != nil {
		t.Fatal(err)
	}
	adv := readRound(t, c, 1, 239)
	want := "[Context budget: ~100% used (100/100 tokens). Older tool results will be cleared soon: note what you need, and finish or summarize your progress.]"
	if adv.Level != AdvisoryWarn || adv.Text != want {
		t.Fatalf("advisory = %+v, want warn %q", adv, want)
	}
	if adv := readRound(t, c, 2, 10); adv.Level != NoAdvisory {
		t.Fatalf("next round: advisory %+v, want none: crossing 80 %% also spends the 60 %% notice", adv)
	}
}

func TestAdvisoryGoesOnLastResultOfBatch(t *testing.T) {
	t.Parallel()
	c := newConv(t, Config{Window: 100, CharsPerToken: 4})
	if err := c.AppendTask("go"); err != nil {
		t.Fatal(err)
	}
	calls := []messages.ToolCall{call("a", "grep", `{"pattern":"x"}`), call("b", "grep", `{"pattern":"y"}`), call("c", "ls", `{}`)}
	if err := c.AppendAssistant(1, assistantWith(calls...)); err != nil {
		t.Fatal(err)
	}
	// Results in another order than the calls: the advisory goes on the
	// last one given.
	adv, err := c.AppendToolResults([]ToolResult{
		{CallID: "c", Content: strings.Repeat("c", 100)},
		{CallID: "a", Content: strings.Repeat("a", 100)},
		{CallID: "b", Content: strings.Repeat("b", 100)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if adv.Level == NoAdvisory {
		t.Fatalf("no advisory at %d of 100 tokens", c.Estimate())
	}
	es := c.Entries()
	for i, e := range es[2:] {
		has := strings.Contains(e.Message.Content, "[Context budget:")
		if has != (i == 2) {
			t.Errorf("result %d (%s): advisory present = %v", i, e.Message.ToolCallID, has)
		}
	}
	if es[4].Message.ToolCallID != "b" {
		t.Errorf("last result is %q, want b", es[4].Message.ToolCallID)
	}
}

func TestAdvisoryLevelString(t *testing.T) {
	t.Parallel()
	for l, want := range map[AdvisoryLevel]string{NoAdvisory: "none", AdvisoryAdvise: "advise", AdvisoryWarn: "warn"} {
		if l.String() != want {
			t.Errorf("%d.String() = %q, want %q", l, l.String(), want)
		}
		b, err := json.Marshal(Advisory{Level: l})
		if err != nil || !strings.Contains(string(b), `"level":"`+want+`"`) {
			t.Errorf("json of level %d = %s, %v", l, b, err)
		}
		var back Advisory
		if err := json.Unmarshal(b, &back); err != nil || back.Level != l {
			t.Errorf("level %d read back as %d, %v", l, back.Level, err)
		}
	}
	var l AdvisoryLevel
	if err := l.UnmarshalText([]byte("panic")); err == nil {
		t.Error("unknown level name accepted")
	}
}
