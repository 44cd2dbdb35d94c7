package convo

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
)

// pendingConv is a conversation whose last assistant message (of round)
// makes calls ids, all pending.
func pendingConv(t testing.TB, round int, ids ...string) *Conversation {
	t.Helper()
	c := newConv(t, Config{Window: 100_000})
	must(t, c.AppendSystem("sys"))
	must(t, c.AppendTask("task"))
	var calls []messages.ToolCall
	for _, id := range ids {
		calls = append(calls, call(id, "shell", `{"command":"true"}`))
	}
	must(t, c.AppendAssistant(round, assistantWith(calls...)))
	return c
}

// journalRecords decodes dir's journal, failing on damage.
func journalRecords(t testing.TB, dir string) []record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	recs, _, torn, err := decodeRecords(data)
	if err != nil || torn != 0 {
		t.Fatalf("journal: %d torn bytes, %v", torn, err)
	}
	return recs
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stepper drives a Writer the way an agent does: each round a tool step
// (checkpoint with the calls pending, then their records), its results
// appended before the next.
type stepper struct {
	t    testing.TB
	w    *Writer
	conv *Conversation
	cp   Checkpoint
}

func newStepper(t testing.TB, dir string, snapshotMin int64) *stepper {
	c := newConv(t, Config{Window: 10_000_000})
	must(t, c.AppendSystem("You are a worker."))
	must(t, c.AppendTask("do it"))
	w := Store{Dir: dir}.Writer()
	w.SnapshotMin = snapshotMin
	t.Cleanup(func() { w.Close() })
	return &stepper{t: t, w: w, conv: c, cp: Checkpoint{Run: "r", Agent: "a", Kind: "root", Task: "do it"}}
}

// step runs round r: two calls, recorded started and done, results of n
// bytes each appended afterwards.
func (s *stepper) step(r, n int) {
	t := s.t
	ids := []string{fmt.Sprintf("a%d", r), fmt.Sprintf("b%d", r)}
	must(t, s.conv.AppendAssistant(r, assistantWith(call(ids[0], "write_file", `{"path":"a"}`), call(ids[1], "think", `{}`))))
	cp := s.cp
	cp.Round, cp.Conversation, cp.Usage = r, s.conv, llm.Usage{PromptTokens: 10 * r}
	cp.State = json.RawMessage(fmt.Sprintf(`{"seq":%d}`, 3*r))
	must(t, s.w.Step(&cp, false))
	must(t, s.w.Record(r, true, JournalEntry{CallID: ids[0], Started: true}))
	body := strings.Repeat("x", n)
	must(t, s.w.Record(r, false, JournalEntry{CallID: ids[1], Done: true, Content: body}))
	must(t, s.w.Record(r, true, JournalEntry{CallID: ids[0], Done: true, Content: body}))
	_, err := s.conv.AppendToolResults([]ToolResult{{CallID: ids[0], Content: body}, {CallID: ids[1], Content: body}})
	must(t, err)
}

// Load gives back the conversation and the step as they were at every
// step, whether the step went into the journal or into a snapshot, with
// in-place changes (eviction, calibration, new limits) in between.
func TestWriterReplaysEveryStep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := newStepper(t, dir, 4096)
	snapshots := 0
	for r := 1; r <= 40; r++ {
		switch r % 7 {
		case 3:
			s.conv.Messages()
			s.conv.Calibrate(s.conv.Chars() / 3)
		case 5:
			cfg := s.conv.Config()
			cfg.Window, cfg.EvictAt, cfg.CompactTarget, cfg.MinAge = s.conv.Estimate()*2, 0.4, 0.2, 1
			must(t, s.conv.SetConfig(cfg))
			if s.conv.Evict().Count == 0 {
				t.Fatalf("round %d: nothing evicted", r)
			}
		}
		s.step(r, 300)
		if len(journalRecords(t, dir)) == 4 { // a fresh snapshot's: the opening and 3 call batches
			snapshots++
		}
		got, err := LoadCheckpoint(dir)
		must(t, err)
		if got.Round != r || got.Usage.PromptTokens != 10*r || string(got.State) != fmt.Sprintf(`{"seq":%d}`, 3*r) {
			t.Fatalf("round %d: loaded round %d usage %+v state %s", r, got.Round, got.Usage, got.State)
		}
		want := s.conv.Clone()
		want.pending = []messages.ToolCall{}
		rec := got.CallRecords()
		if len(rec) != 2 || !rec[fmt.Sprintf("a%d", r)].Done || !rec[fmt.Sprintf("b%d", r)].Done {
			t.Fatalf("round %d: call records %+v", r, rec)
		}
		results := make([]ToolResult, 0, 2)
		for _, id := range []string{fmt.Sprintf("a%d", r), fmt.Sprintf("b%d", r)} {
			results = append(results, ToolResult{CallID: id, Content: rec[id].Content})
		}
		if len(got.Conversation.Pending()) != 2 {
			t.Fatalf("round %d: %d calls pending after load", r, len(got.Conversation.Pending()))
		}
		_, err = got.Conversation.AppendToolResults(results)
		must(t, err)
		sameConversation(t, want, got.Conversation)
	}
	if snapshots < 2 {
		t.Errorf("%d snapshots in 40 rounds, want several (SnapshotMin 4 KiB)", snapshots)
	}
}

// A journal cut at every byte of its last record (a kill or a power loss
// mid-write) loads as it was before that record, the cut-off part
// reported in TornBytes; whole, it loads with the record. A writer
// recording after the cut continues the journal.
func TestJournalTornAtEveryOffset(t *testing.T) {
	t.Parallel()
	for _, last := range []string{"step", "calls"} {
		t.Run(last, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := newStepper(t, dir, 1<<20)
			for r := 1; r <= 3; r++ {
				s.step(r, 50)
			}
			var want *Checkpoint
			if last == "step" {
				want = mustLoad(t, dir)
				must(t, s.conv.AppendAssistant(4, assistantWith(call("x", "think", `{}`))))
				cp := s.cp
				cp.Round, cp.Conversation = 4, s.conv
				must(t, s.w.Step(&cp, false))
			} else {
				must(t, s.conv.AppendAssistant(4, assistantWith(call("x", "think", `{}`), call("y", "think", `{}`))))
				cp := s.cp
				cp.Round, cp.Conversation = 4, s.conv
				must(t, s.w.Step(&cp, false))
				must(t, s.w.Record(4, false, JournalEntry{CallID: "x", Done: true, Content: "x done"}))
				want = mustLoad(t, dir)
				must(t, s.w.Record(4, false, JournalEntry{CallID: "y", Done: true, Content: "y done"}))
			}
			whole := mustLoad(t, dir)
			path := filepath.Join(dir, JournalFile)
			data, _ := os.ReadFile(path)
			recs := journalRecords(t, dir)
			start := len(data) - recordHeader - 1 - len(recs[len(recs)-1].payload)
			for cut := start; cut <= len(data); cut++ {
				must(t, os.WriteFile(path, data[:cut], 0o600))
				got, err := LoadCheckpoint(dir)
				if err != nil {
					t.Fatalf("cut at %d of %d: %v", cut, len(data), err)
				}
				exp, torn := want, cut-start
				if cut == len(data) {
					exp, torn = whole, 0
				}
				if got.TornBytes != torn || got.Round != exp.Round || len(got.Calls) != len(exp.Calls) {
					t.Fatalf("cut at %d: round %d, %d call records, %d torn bytes; want %d, %d, %d",
						cut, got.Round, len(got.Calls), got.TornBytes, exp.Round, len(exp.Calls), torn)
				}
				sameConversation(t, exp.Conversation, got.Conversation)
				if cut == start+recordHeader/2 {
					// Recording after a cut drops the torn bytes first.
					must(t, Store{Dir: dir}.Record(got.Round, false, JournalEntry{CallID: "z", Done: true}))
					if again := mustLoad(t, dir); again.TornBytes != 0 || !again.CallRecords()["z"].Done {
						t.Fatalf("a record after the cut: %+v", again.Calls)
					}
				}
			}
		})
	}
}

func mustLoad(t testing.TB, dir string) *Checkpoint {
	t.Helper()
	cp, err := LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// The bytes written per round do not grow with the conversation: 200
// rounds write about twice what 100 do (quadratic growth would be four
// times), snapshots included. Counted in bytes, not time.
func TestJournalBytesPerRoundLinear(t *testing.T) {
	t.Parallel()
	written := func(rounds int, snapshotMin int64) int64 {
		s := newStepper(t, t.TempDir(), snapshotMin)
		for r := 1; r <= rounds; r++ {
			s.step(r, 400)
		}
		return s.w.Written()
	}
	for _, min := range []int64{16 << 10, DefaultSnapshotMin} {
		w100, w200 := written(100, min), written(200, min)
		ratio := float64(w200) / float64(w100)
		t.Logf("snapshot min %d: %d bytes for 100 rounds, %d for 200 (×%.2f), %d per round", min, w100, w200, ratio, w200/200)
		if ratio > 2.6 {
			t.Errorf("snapshot min %d: 200 rounds wrote %.2f× what 100 did: the bytes per round grow with the conversation", min, ratio)
		}
	}
}

// The decoder never panics; what it reads re-encodes to the prefix it
// says is valid, and a torn tail is reported, not read.
func FuzzJournalDecode(f *testing.F) {
	var j []byte
	j = appendRecord(j, kindOpen, []byte(`{"v":1,"id":"ab"}`))
	j = appendRecord(j, kindCalls, []byte(`{"round":1,"calls":[{"call_id":"a","done":true}]}`))
	f.Add(j)
	f.Add(j[:len(j)-3])
	f.Add(append(append([]byte{}, j...), 0, 0, 0, 0, 0, 0, 0, 0, 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, valid, torn, err := decodeRecords(data)
		if valid < 0 || valid > len(data) || (err == nil && valid+torn != len(data)) {
			t.Fatalf("valid %d, torn %d of %d bytes", valid, torn, len(data))
		}
		var again []byte
		for _, r := range recs {
			again = appendRecord(again, r.kind, r.payload)
		}
		if string(again) != string(data[:valid]) {
			t.Fatal("the records read do not re-encode to the valid prefix")
		}
		if r2, v2, t2, err2 := decodeRecords(data[:valid]); len(r2) != len(recs) || v2 != valid || t2 != 0 || err2 != nil {
			t.Fatalf("the valid prefix decodes differently: %d records, %d valid, %d torn, %v", len(r2), v2, t2, err2)
		}
		// Replaying it on a checkpoint errs or not, but never panics.
		cp := &Checkpoint{Journal: "ab", Conversation: newConv(t, Config{Window: 1000})}
		_ = cp.replay(data)
	})
}
