package convo

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
)

// sampleConv is a conversation with every kind of entry: pinned, parallel
// calls, a cleared result, an advisory fired, a calibrated ratio.
func sampleConv(t testing.TB) *Conversation {
	t.Helper()
	c := newConv(t, Config{Window: 1000, CharsPerToken: 4, Protected: []string{"todo"}})
	if err := c.AppendSystem("You are a worker."); err != nil {
		t.Fatal(err)
	}
	if err := c.AppendTask("Fix the bug in ünïcode.go"); err != nil {
		t.Fatal(err)
	}
	addRound(t, c, 1, []messages.ToolCall{call("a", "grep", `{"pattern":"bug"}`), call("b", "todo", `{"items":["x"]}`)},
		[]string{strings.Repeat("g", 2000), "todo ok"})
	readRound(t, c, 2, 900)
	readRound(t, c, 3, 900)
	readRound(t, c, 4, 10)
	c.Messages()
	c.Calibrate(1000)
	c.Evict()
	if err := c.AppendAssistant(5, llm.Message{Role: llm.RoleAssistant, Content: "done", Reasoning: "because"}); err != nil {
		t.Fatal(err)
	}
	return c
}

func sampleCheckpoint(t testing.TB) *Checkpoint {
	return &Checkpoint{Run: "run-1", Agent: "root", Kind: "root", Task: "Fix the bug", Round: 5,
		Phase: "work", Conversation: sampleConv(t), Usage: llm.Usage{PromptTokens: 1200, CompletionTokens: 80},
		Cost: 0.0123, Model: "gpt-x", State: json.RawMessage(`{"children":["c1"]}`)}
}

// sameConversation fails unless a and b hold the same state.
func sameConversation(t testing.TB, a, b *Conversation) {
	t.Helper()
	if !reflect.DeepEqual(a.Entries(), b.Entries()) {
		t.Errorf("entries differ:\n%+v\n%+v", a.Entries(), b.Entries())
	}
	if a.Estimate() != b.Estimate() || a.CharsPerToken() != b.CharsPerToken() || a.Round() != b.Round() ||
		a.fired != b.fired || a.calibrated != b.calibrated || !reflect.DeepEqual(a.Config(), b.Config()) {
		t.Errorf("state differs: est %d/%d ratio %v/%v round %d/%d fired %v/%v cfg %+v/%+v",
			a.Estimate(), b.Estimate(), a.CharsPerToken(), b.CharsPerToken(), a.Round(), b.Round(),
			a.fired, b.fired, a.Config(), b.Config())
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	dir, err := CheckpointDir(data, "run-1", "root")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(data, "runs", "run-1", "root"); dir != want {
		t.Fatalf("CheckpointDir = %s, want %s", dir, want)
	}
	cp := sampleCheckpoint(t)
	if err := SaveCheckpoint(dir, cp); err != nil {
		t.Fatal(err)
	}
	if cp.Version != CheckpointVersion || time.Since(cp.SavedAt) < 0 || cp.SavedAt.IsZero() {
		t.Errorf("SaveCheckpoint set version %d saved_at %v", cp.Version, cp.SavedAt)
	}
	got, err := LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	sameConversation(t, cp.Conversation, got.Conversation)
	if !got.SavedAt.Equal(cp.SavedAt) {
		t.Errorf("SavedAt %v, want %v", got.SavedAt, cp.SavedAt)
	}
	got.Conversation, cp.Conversation = nil, nil
	got.SavedAt = cp.SavedAt
	if !reflect.DeepEqual(got, cp) {
		t.Errorf("checkpoint differs:\n got %+v\nwant %+v", got, cp)
	}
}

func TestResumedConversationContinues(t *testing.T) {
	t.Parallel()
	c := sampleConv(t)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var r Conversation
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	sameConversation(t, c, &r)
	// A resumed conversation with a pending call accepts its result.
	if err := r.AppendUser(5, "go on"); err != nil {
		t.Fatal(err)
	}
	if err := r.AppendAssistant(6, assistantWith(call("z", "ls", `{}`))); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(&r)
	var r2 Conversation
	if err := json.Unmarshal(b, &r2); err != nil {
		t.Fatal(err)
	}
	if p := r2.Pending(); len(p) != 1 || p[0].ID != "z" {
		t.Fatalf("pending after resume = %v", p)
	}
	if _, err := r2.AppendToolResults([]ToolResult{{CallID: "z", Content: "a b"}}); err != nil {
		t.Fatal(err)
	}
	if err := ValidatePairs(r2.Messages()); err != nil {
		t.Fatal(err)
	}
}

func TestCheckpointSaveIsAtomic(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a")
	// One writer saves checkpoints of alternating sizes while readers load:
	// every load must see one whole checkpoint.
	small := sampleCheckpoint(t)
	small.State = json.RawMessage(`{}`)
	if err := SaveCheckpoint(dir, small.cloneForTest()); err != nil {
		t.Fatal(err)
	}
	big := sampleCheckpoint(t)
	big.State = json.RawMessage(`{"pad":"` + strings.Repeat("p", 50000) + `"}`)
	const saves = 30
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				got, err := LoadCheckpoint(dir)
				if err != nil {
					errs <- err
					return
				}
				if n := len(got.State); n != 2 && n != len(big.State) {
					errs <- errors.New("loaded a checkpoint with a state of unexpected size")
					return
				}
			}
		})
	}
	for i := range saves {
		cp := small
		if i%2 == 0 {
			cp = big
		}
		if err := SaveCheckpoint(dir, cp.cloneForTest()); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assertOnlyCheckpoint(t, dir)
}

// cloneForTest copies cp with its own conversation, as the agent loop does
// before handing a checkpoint to a writer goroutine.
func (cp *Checkpoint) cloneForTest() *Checkpoint {
	out := *cp
	out.Conversation = cp.Conversation.Clone()
	return &out
}

// assertOnlyCheckpoint fails if dir holds anything but checkpoint.json
// and its journal (a temporary file left behind).
func assertOnlyCheckpoint(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != CheckpointFile && e.Name() != JournalFile {
			t.Errorf("left in %s: %s", dir, e.Name())
		}
	}
}

func TestCheckpointFailedSaveKeepsPrevious(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := sampleCheckpoint(t)
	if err := SaveCheckpoint(dir, good); err != nil {
		t.Fatal(err)
	}
	bad := sampleCheckpoint(t)
	bad.State = json.RawMessage(`{not json`)
	if err := SaveCheckpoint(dir, bad); err == nil || !strings.Contains(err.Error(), "encode") {
		t.Fatalf("saving an invalid state: err = %v, want an encode error", err)
	}
	noConv := sampleCheckpoint(t)
	noConv.Conversation = nil
	if err := SaveCheckpoint(dir, noConv); err == nil || !strings.Contains(err.Error(), "missing conversation") {
		t.Fatalf("saving without a conversation: err = %v", err)
	}
	got, err := LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.State) != string(good.State) {
		t.Errorf("previous checkpoint replaced: state %s", got.State)
	}
	assertOnlyCheckpoint(t, dir)
}
