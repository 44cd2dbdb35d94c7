package actors

import (
	"encoding/json"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors/convo"
	"github.com/troupe-ai/troupe/llm"
)

func testCheckpoint(t *testing.T, round int) *convo.Checkpoint {
	t.Helper()
	conv, err := convo.New(convo.Config{Window: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if err := conv.AppendTask("t"); err != nil {
		t.Fatal(err)
	}
	if err := conv.AppendAssistant(round, llm.Message{Role: llm.RoleAssistant, Content: "x"}); err != nil {
		t.Fatal(err)
	}
	return &convo.Checkpoint{Run: "r", Agent: "a", Kind: "root", Round: round, Conversation: conv}
}

// Records that arrive while a batch is being written go out together in
// the next one, and each caller returns only once its record is on disk.
func TestCheckpointerGroupCommit(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var first sync.Once
	var batches atomic.Int32
	store := convo.Store{Dir: filepath.Join(t.TempDir(), "a"), Filter: func(b []byte) []byte {
		if strings.HasPrefix(string(b), `{"round":3,"calls":`) { // a batch of call records
			batches.Add(1)
			first.Do(func() { <-release })
		}
		return b
	}}
	var written atomic.Int64
	c := newCheckpointer(store, zerolog.Nop(), &written, func(*convo.Checkpoint, string, error) {})
	c.begin(testCheckpoint(t, 3))
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { c.record(i%2 == 0, convo.JournalEntry{CallID: string(rune('a' + i)), Done: true}) })
	}
	// Wait until the first batch is held in the filter and the others queued.
	for {
		c.mu.Lock()
		q := c.queued
		c.mu.Unlock()
		if q == n {
			break
		}
		goruntime.Gosched()
	}
	close(release)
	wg.Wait()
	if b := batches.Load(); b != 2 {
		t.Errorf("%d batches for %d records, want 2 (the held one and the rest)", b, n)
	}
	j, err := store.Journal(3)
	if err != nil || len(j) != n {
		t.Fatalf("journal has %d of %d records: %v", len(j), n, err)
	}
	if written.Load() == 0 {
		t.Error("the bytes written were not counted")
	}
	// The next step's journal starts empty.
	c.begin(testCheckpoint(t, 4))
	if j, _ := store.Journal(3); len(j) != 0 {
		t.Errorf("round 3's records are round 4's: %v", j)
	}
}

// Without a saved step there is nothing to journal against: records are
// dropped, and what was saved before stays as it was.
func TestCheckpointerWithoutCheckpoint(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a")
	store := convo.Store{Dir: dir}
	c := newCheckpointer(store, zerolog.Nop(), nil, func(*convo.Checkpoint, string, error) {})
	c.record(true, convo.JournalEntry{CallID: "x", Done: true}) // no step open
	c.begin(testCheckpoint(t, 1))
	c.record(false, convo.JournalEntry{CallID: "y", Done: true})
	// The next save fails (a state that is not JSON cannot be encoded).
	bad := testCheckpoint(t, 2)
	bad.State = json.RawMessage(`{not json`)
	var saveErr error
	c.onSaved = func(_ *convo.Checkpoint, _ string, err error) { saveErr = err }
	c.begin(bad)
	if saveErr == nil {
		t.Fatal("the save did not fail")
	}
	c.record(true, convo.JournalEntry{CallID: "z", Done: true})
	if j, err := store.Journal(1); err != nil || len(j) != 1 || !j["y"].Done {
		t.Errorf("round 1's journal after a failed save: %v %v", j, err)
	}
}

// A step saved behind its calls: the records they make before the step is
// written wait for it and land after it in its journal; when its save
// fails they are dropped and nobody waits for ever.
func TestCheckpointerBeginBehind(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var order []string // the writes of round 2, as they leave
	store := convo.Store{Dir: filepath.Join(t.TempDir(), "a"), Filter: func(b []byte) []byte {
		s := string(b)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.HasPrefix(s, `{"round":2,"calls":`):
			order = append(order, "calls")
		case strings.Contains(s, `"round":2`): // round 2's step
			order = append(order, "step")
		}
		return b
	}}
	c := newCheckpointer(store, zerolog.Nop(), nil, func(*convo.Checkpoint, string, error) {})
	ck1 := testCheckpoint(t, 1)
	c.begin(ck1)
	// Round 2 continues round 1's conversation: a journal record.
	if err := ck1.Conversation.AppendAssistant(2, llm.Message{Role: llm.RoleAssistant, Content: "y"}); err != nil {
		t.Fatal(err)
	}
	ck := &convo.Checkpoint{Run: "r", Agent: "a", Kind: "root", Round: 2, Conversation: ck1.Conversation}
	write := c.beginBehind(ck)
	recorded := make(chan struct{})
	go func() {
		c.record(false, convo.JournalEntry{CallID: "r1", Done: true, Content: "read"})
		close(recorded)
	}()
	for {
		c.mu.Lock()
		q := c.queued
		c.mu.Unlock()
		if q == 1 {
			break
		}
		goruntime.Gosched()
	}
	// Give a record that would not wait for its step every chance to
	// leave now (a correct one waits, however long this runs).
	for range 1000 {
		goruntime.Gosched()
	}
	select {
	case <-recorded:
		t.Fatal("a call's record returned before its step was written")
	default:
	}
	write()
	write() // once only
	<-recorded
	if mu.Lock(); strings.Join(order, ",") != "step,calls" {
		t.Errorf("round 2's writes left in the order %v, want the step once, first", order)
	}
	mu.Unlock()
	ckOut, err := store.Load()
	if err != nil || ckOut.Round != 2 {
		t.Fatalf("the saved step: %+v %v", ckOut, err)
	}
	if j, err := store.Journal(2); err != nil || !j["r1"].Done || j["r1"].Content != "read" {
		t.Errorf("round 2's journal: %v %v", j, err)
	}

	// A step whose save fails: its calls' records are dropped.
	bad := testCheckpoint(t, 3)
	bad.State = json.RawMessage(`{not json`)
	var saveErr error
	c.onSaved = func(_ *convo.Checkpoint, _ string, err error) { saveErr = err }
	c.beginBehind(bad)()
	if saveErr == nil {
		t.Fatal("the save did not fail")
	}
	c.record(false, convo.JournalEntry{CallID: "r2", Done: true})
	if j, _ := store.Journal(2); len(j) != 1 {
		t.Errorf("a record of the failed step went into round 2's journal: %v", j)
	}
}
