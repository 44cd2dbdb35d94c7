package convo

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// benchConv builds a conversation of rounds rounds of 4 parallel calls with
// 2000-char results, in a window big enough not to advise.
func benchConv(b *testing.B, rounds int, window int) *Conversation {
	c := newConv(b, Config{Window: window})
	if err := c.AppendSystem(strings.Repeat("s", 4000)); err != nil {
		b.Fatal(err)
	}
	if err := c.AppendTask("task"); err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("r", 2000)
	for r := 1; r <= rounds; r++ {
		calls := make([]messages.ToolCall, 4)
		contents := make([]string, 4)
		for i := range calls {
			calls[i] = call(fmt.Sprintf("c%d_%d", r, i), "read_file", fmt.Sprintf(`{"path":"f%d.go"}`, i))
			contents[i] = body
		}
		addRound(b, c, r, calls, contents)
	}
	return c
}

// BenchmarkAppendRound measures appending one round of 4 results with the
// advisory check, on a 100-round conversation.
func BenchmarkAppendRound(b *testing.B) {
	c := benchConv(b, 100, 10_000_000)
	body := strings.Repeat("r", 2000)
	b.ReportAllocs()
	r := 100
	for b.Loop() {
		r++
		calls := []messages.ToolCall{call(fmt.Sprintf("x%d", r), "grep", `{"pattern":"p"}`)}
		addRound(b, c, r, calls, []string{body})
	}
}

// BenchmarkMessages measures building the request messages of a 100-round
// conversation (401 messages).
func BenchmarkMessages(b *testing.B) {
	c := benchConv(b, 100, 10_000_000)
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Messages()
	}
}

// BenchmarkEvict measures eviction down from about 100 % of the window on a
// 100-round conversation (a fresh clone each time).
func BenchmarkEvict(b *testing.B) {
	base := benchConv(b, 100, 10_000_000)
	if err := base.SetConfig(Config{Window: base.Estimate()}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c := base.Clone()
		if ev := c.Evict(); ev.Count == 0 {
			b.Fatal("nothing evicted")
		}
	}
}

// BenchmarkSaveCheckpoint measures an atomic checkpoint write (encode,
// temp file, fsync, rename) of a 100-round conversation (~830 KB).
func BenchmarkSaveCheckpoint(b *testing.B) {
	c := benchConv(b, 100, 10_000_000)
	dir := filepath.Join(b.TempDir(), "a")
	cp := &Checkpoint{Run: "r", Agent: "a", Kind: "root", Conversation: c}
	b.ReportAllocs()
	for b.Loop() {
		if err := SaveCheckpoint(dir, cp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveCheckpointNoSync is BenchmarkSaveCheckpoint without the
// fsyncs (what a step of read-only calls writes).
func BenchmarkSaveCheckpointNoSync(b *testing.B) {
	c := benchConv(b, 100, 10_000_000)
	s := Store{Dir: filepath.Join(b.TempDir(), "a")}
	cp := &Checkpoint{Run: "r", Agent: "a", Kind: "root", Conversation: c}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Save(cp, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnmarshalConversation measures decoding (and checking) a
// 100-round conversation.
func BenchmarkUnmarshalConversation(b *testing.B) {
	data, err := json.Marshal(benchConv(b, 100, 10_000_000))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var c Conversation
		if err := json.Unmarshal(data, &c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJournalRecord measures recording one batch of completed tool
// results (encode, one append; with fsync: the journal fsynced too): a
// single 2 KB result, and 8 results that completed together.
func BenchmarkJournalRecord(b *testing.B) {
	body := strings.Repeat("r", 2000)
	for _, sync := range []bool{true, false} {
		for _, n := range []int{1, 8} {
			b.Run(fmt.Sprintf("fsync=%v/results=%d", sync, n), func(b *testing.B) {
				s := Store{Dir: filepath.Join(b.TempDir(), "a")}
				w := s.Writer()
				defer w.Close()
				cp := sampleCheckpoint(b)
				if err := w.Snapshot(cp, true); err != nil {
					b.Fatal(err)
				}
				batch := make([]JournalEntry, n)
				for i := range batch {
					batch[i] = JournalEntry{CallID: fmt.Sprintf("call_%d", i), Done: true, Content: body}
				}
				b.ReportAllocs()
				round := 0
				for b.Loop() {
					round++
					if err := w.Record(cp.Round, sync, batch...); err != nil {
						b.Fatal(err)
					}
					if round%100 == 0 {
						b.StopTimer()
						if err := w.Snapshot(cp, false); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
				}
			})
		}
	}
}
