package convo

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
)

func TestHeadTail(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("H", 5000) + strings.Repeat("T", 5000)
	// max 2000: the first 1333 and the last 667 runes, 8000 cut.
	want := strings.Repeat("H", 1333) + "\n[... 8000 chars cut ...]\n" + strings.Repeat("T", 667)
	if got := headTail(s, 2000); got != want {
		t.Errorf("headTail cut wrongly: %d runes, starts %q", len([]rune(got)), got[:20])
	}
	if got := headTail("short", 2000); got != "short" {
		t.Errorf("headTail(short) = %q", got)
	}
}

func TestDropMiddle(t *testing.T) {
	t.Parallel()
	parts := make([]string, 10)
	for i := range parts {
		parts[i] = fmt.Sprintf("%02d", i) + strings.Repeat(".", 98) // 100 bytes
	}
	// Budget 450: the head takes what fits in 150 (one part), the tail the
	// rest up to 450 (three parts); six are left out.
	got := dropMiddle(parts, 450)
	if len(got) != 5 || got[0] != parts[0] || got[2] != parts[7] || got[4] != parts[9] ||
		!strings.Contains(got[1], "6 messages left out") {
		t.Errorf("dropMiddle = %q", got)
	}
	if got := dropMiddle(parts[:2], 450); len(got) != 2 {
		t.Errorf("dropMiddle of what fits = %q", got)
	}
}

func TestTranscript(t *testing.T) {
	t.Parallel()
	c := newConv(t, Config{Window: 100000})
	if err := c.AppendSystem("system prompt"); err != nil {
		t.Fatal(err)
	}
	if err := c.AppendTask("find the loader"); err != nil {
		t.Fatal(err)
	}
	if err := c.AppendAssistant(1, llm.Message{Role: llm.RoleAssistant, Content: "Looking.",
		ToolCalls: []messages.ToolCall{call("a", "grep", `{"pattern":"Load","path":"src"}`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendToolResults([]ToolResult{{CallID: "a", Content: "src/load.go\n" + strings.Repeat("z", 5000)}}); err != nil {
		t.Fatal(err)
	}
	if err := c.AppendUser(2, "hurry"); err != nil {
		t.Fatal(err)
	}
	got := c.transcript(2, c.Len())
	for _, want := range []string{
		"Task:\nfind the loader\n",
		"\n[round 1] assistant:\nLooking.\n-> calls grep {\"pattern\":\"Load\",\"path\":\"src\"}\n",
		"\n[round 1] result of grep(path=src, pattern=Load):\nsrc/load.go\n",
		"[... 3012 chars cut ...]", // 5012 runes shown as 2000
		"\n[round 2] user:\nhurry\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript lacks %q:\n%s", want, got[:min(len(got), 600)])
		}
	}
	if strings.Contains(got, "system prompt") {
		t.Error("the pinned system prompt was put in the transcript")
	}
}

// TestCloneForWriter: the owner goes on appending and clearing results in
// place while a writer goroutine saves clones (run with -race).
func TestCloneForWriter(t *testing.T) {
	t.Parallel()
	c := newConv(t, Config{Window: 700})
	if err := c.AppendTask("task"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	clones := make(chan *Conversation)
	var wg sync.WaitGroup
	var saveErr error
	wg.Go(func() {
		for cl := range clones {
			if err := SaveCheckpoint(dir, &Checkpoint{Run: "r", Agent: "a", Conversation: cl}); err != nil && saveErr == nil {
				saveErr = err
			}
		}
	})
	evicted := 0
	for r := 1; r <= 20; r++ {
		readRound(t, c, r, 100)
		evicted += c.Evict().Count
		clones <- c.Clone() // the next round changes c while this one is saved
	}
	close(clones)
	if evicted == 0 {
		t.Fatal("nothing was cleared: the test does not mutate entries in place")
	}
	wg.Wait()
	if saveErr != nil {
		t.Fatal(saveErr)
	}
	got, err := LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	sameConversation(t, got.Conversation, c)
}
