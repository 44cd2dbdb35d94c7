package convo

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm"
)

// snapshotMessages is a deep copy of msgs, to compare against later.
func snapshotMessages(msgs []llm.Message) []llm.Message {
	out := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		out[i] = cloneMessage(m)
	}
	return out
}

// TestMessagesHandedOutNeverChange: Messages reuses its list across
// rounds; a list handed out must stay as it was through later appends,
// eviction (an entry cleared in place) and compaction (entries replaced),
// and every new list must match the entries.
func TestMessagesHandedOutNeverChange(t *testing.T) {
	c := newConv(t, Config{Window: 1_000_000})
	if err := c.AppendTask("task"); err != nil {
		t.Fatal(err)
	}
	var handed [][]llm.Message
	var copies [][]llm.Message
	take := func(step string) {
		t.Helper()
		m := c.Messages()
		if want := msgsOf(c.Entries()); !reflect.DeepEqual(m, want) {
			t.Fatalf("%s: Messages differs from the entries:\n got %+v\nwant %+v", step, m, want)
		}
		if cap(m) != len(m) {
			t.Fatalf("%s: cap %d > len %d: a caller's append would write into the conversation's list", step, cap(m), len(m))
		}
		handed, copies = append(handed, m), append(copies, snapshotMessages(m))
	}
	for r := 1; r <= 6; r++ {
		readRound(t, c, r, 3000)
		take("after round")
	}
	// A caller appending to its list (the jobs note) must not reach the
	// conversation's.
	extra := append(c.Messages(), llm.Message{Role: llm.RoleUser, Content: "note"})
	_ = extra
	readRound(t, c, 7, 3000)
	take("after a caller's append")
	if err := c.SetConfig(Config{Window: c.Estimate() + 100, EvictAt: 0.6, MinAge: 1}); err != nil {
		t.Fatal(err)
	}
	if ev := c.Evict(); ev.Count == 0 {
		t.Fatal("nothing evicted: the test needs an in-place change")
	}
	take("after eviction")
	if !slices.ContainsFunc(c.Messages(), func(m llm.Message) bool {
		return m.Role == llm.RoleTool && len(m.Content) < 3000
	}) {
		t.Fatal("the list after eviction still holds the cleared results")
	}
	for i := range handed {
		if !reflect.DeepEqual(handed[i], copies[i]) {
			t.Fatalf("list %d changed after it was handed out", i)
		}
	}
}

// TestMessagesOfAClone: a clone and its original extended separately
// keep their own messages (they must not share the list's spare room).
func TestMessagesOfAClone(t *testing.T) {
	c := newConv(t, Config{Window: 1_000_000})
	if err := c.AppendTask("task"); err != nil {
		t.Fatal(err)
	}
	readRound(t, c, 1, 10)
	_ = c.Messages()
	d := c.Clone()
	readRound(t, c, 2, 20)
	readRound(t, d, 2, 30)
	gc, gd := c.Messages(), d.Messages()
	if gc[len(gc)-1].Content != strings.Repeat("x", 20) || gd[len(gd)-1].Content != strings.Repeat("x", 30) {
		t.Fatalf("clone and original mixed: %q / %q", gc[len(gc)-1].Content, gd[len(gd)-1].Content)
	}
}
