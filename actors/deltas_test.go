package actors

import (
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
)

// The coalescer emits at most one delta per interval, however many
// fragments arrive, loses none, and turns a retry's Delta{} into Reset.
func TestDeltaCoalescerRate(t *testing.T) {
	clock := time.Unix(0, 0)
	var got []messages.LLMDelta
	c := newDeltaCoalescer(3, func(d messages.LLMDelta) { got = append(got, d) }, func() time.Time { return clock })
	var want strings.Builder
	for i := 0; i < 1000; i++ { // 1000 fragments over one simulated second
		clock = clock.Add(time.Millisecond)
		c.add(llm.Delta{Content: "ab"})
		want.WriteString("ab")
	}
	c.flush()
	if len(got) > 11 || len(got) < 9 {
		t.Errorf("%d deltas over a second, want about 10", len(got))
	}
	var text strings.Builder
	for _, d := range got {
		text.WriteString(d.Text)
		if d.Round != 3 || d.Reset {
			t.Errorf("delta %+v", d)
		}
	}
	if text.String() != want.String() {
		t.Errorf("fragments lost: %d of %d bytes", text.Len(), want.Len())
	}
	got = nil
	c.add(llm.Delta{Content: "dropped"})
	c.add(llm.Delta{}) // the call is retried: discard
	c.add(llm.Delta{Reasoning: "think", Content: "kept"})
	c.flush()
	if len(got) != 1 || !got[0].Reset || got[0].Text != "kept" || got[0].Reasoning != "think" {
		t.Errorf("after a retry: %+v", got)
	}
	c.flush()
	if len(got) != 1 {
		t.Error("an empty flush emitted")
	}
}
