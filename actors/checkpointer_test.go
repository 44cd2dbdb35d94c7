package actors

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/internal/convo"
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
	store := convo.Store{Dir: filepath.Join(t.TempDir(), "a"), Filter: func(b []byte) []byte {
		if len(b) > 0 && string(b[:6]) == `{"v":1` { // a journal batch, not the checkpoint
			first.Do(func() { <-release })
		}
		return b
	}}
	c := newCheckpointer(store, zerolog.Nop(), func(*convo.Checkpoint, string, error) {})
	c.begin(testCheckpoint(t, 3), true)
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
	files, _ := filepath.Glob(filepath.Join(store.Dir, "journal-*.json"))
	if len(files) != 2 {
		t.Errorf("%d batch files for %d records, want 2 (the held one and the rest)", len(files), n)
	}
	j, err := store.Journal(3)
	if err != nil || len(j) != n {
		t.Fatalf("journal has %d of %d records: %v", len(j), n, err)
	}
	// The next step's checkpoint holds these results: its journal starts empty.
	c.begin(testCheckpoint(t, 4), false)
	if j, _ := store.Journal(3); len(j) != 0 {
		t.Errorf("round 3's journal survived round 4's checkpoint: %v", j)
	}
}

// Without a saved checkpoint there is nothing to journal against: records
// are dropped, and an older journal stays as it was.
func TestCheckpointerWithoutCheckpoint(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a")
	store := convo.Store{Dir: dir}
	c := newCheckpointer(store, zerolog.Nop(), func(*convo.Checkpoint, string, error) {})
	c.record(true, convo.JournalEntry{CallID: "x", Done: true}) // no step open
	c.begin(testCheckpoint(t, 1), true)
	c.record(false, convo.JournalEntry{CallID: "y", Done: true})
	// The next save fails (a non-empty directory where checkpoint.json
	// would be renamed to, which stops root too).
	ck := filepath.Join(dir, convo.CheckpointFile)
	if err := os.Remove(ck); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ck, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	var saveErr error
	c.onSaved = func(_ *convo.Checkpoint, _ string, err error) { saveErr = err }
	c.begin(testCheckpoint(t, 2), true)
	if saveErr == nil {
		t.Fatal("the save did not fail")
	}
	c.record(true, convo.JournalEntry{CallID: "z", Done: true})
	if j, err := store.Journal(1); err != nil || len(j) != 1 || !j["y"].Done {
		t.Errorf("round 1's journal after a failed save: %v %v", j, err)
	}
}
