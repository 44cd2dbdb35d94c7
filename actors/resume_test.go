package actors_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/actors/convo"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// A run killed in the middle of a tool step left its checkpoint (the
// step's calls pending) and a journal: one call done, one started and cut
// off, two never started. Resumed, the done call keeps its recorded result
// and is not run again, the cut-off one is reported interrupted and not run
// again, and only the two others run.
func TestResumeFinishesAToolStepFromItsJournal(t *testing.T) {
	ws := workspace(t, nil)
	const runID = "run-journal"
	conv, err := convo.New(convo.Config{Window: 128_000})
	must(t, err)
	must(t, conv.AppendSystem("You are the root agent."))
	must(t, conv.AppendTask("append three lines"))
	shell := func(id, line string) messages.ToolCall {
		return messages.ToolCall{ID: id, Name: "shell", Args: json.RawMessage(`{"command":"echo ` + line + ` >> out.txt"}`)}
	}
	write := messages.ToolCall{ID: "d", Name: "write_file", Args: json.RawMessage(`{"path":"new.txt","content":"new\n"}`)}
	must(t, conv.AppendAssistant(1, llm.Message{Role: llm.RoleAssistant,
		ToolCalls: []messages.ToolCall{shell("a", "a"), shell("b", "b"), shell("c", "c"), write}}))
	dir, err := convo.CheckpointDir(stateOf(t, ws), runID, actors.RootAgentID)
	must(t, err)
	store := convo.Store{Dir: dir}
	must(t, store.Save(&convo.Checkpoint{Run: runID, Agent: actors.RootAgentID, Kind: actors.KindRoot,
		Task: "append three lines", Round: 1, Phase: actors.PhaseExecute, Conversation: conv, Model: "big-model",
		State: json.RawMessage(`{"seq":7}`)}, true))
	must(t, store.Record(1, true, convo.JournalEntry{CallID: "a", Started: true}))
	must(t, store.Record(1, true, convo.JournalEntry{CallID: "a", Done: true, Content: "[exit: 0]\n(recorded before the crash)"},
		convo.JournalEntry{CallID: "b", Started: true}))

	srv := llmtest.New(script(kind("root", say("three lines"))))
	defer srv.Close()
	cp, err := actors.FindCheckpoint(stateOf(t, ws), runID)
	must(t, err)
	rec := &actors.Recorder{}
	o := options(t, srv, ws, "", rec)
	o.Settings = noPlan()
	o.Resume = cp
	res := run(t, o)
	if res.Status != actors.StatusCompleted || res.Text != "three lines" {
		t.Fatalf("resumed run: %+v", res.AgentResult)
	}
	if out, _ := os.ReadFile(filepath.Join(ws, "out.txt")); string(out) != "c\n" {
		t.Errorf("out.txt = %q: only the call that never started may run", out)
	}
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); err != nil {
		t.Error("the write that never started did not run")
	}
	results := toolResults(srv.Requests()[0])
	if len(results) != 4 || results[0] != "[exit: 0]\n(recorded before the crash)" ||
		!strings.Contains(results[1], "shell was interrupted") || !strings.HasPrefix(results[2], "[exit: 0]") ||
		!strings.Contains(results[3], "new.txt") {
		t.Fatalf("results the model got after resume: %q", results)
	}
	if n := len(rec.OfType(messages.EvtToolStarted)); n != 2 {
		t.Errorf("%d tool.started events after resume, want 2", n)
	}
	for _, ev := range rec.Events() {
		if ev.Agent == actors.RootAgentID {
			if ev.Seq != 8 {
				t.Errorf("the root's events go on at seq %d, want 8", ev.Seq)
			}
			break
		}
	}
}

// A resumed root stays on its checkpoint's model, not the configured
// default, unless the caller picks another; and it may edit a file it read
// before the run stopped, without reading it again.
func TestResumeKeepsModelAndReads(t *testing.T) {
	ws := workspace(t, map[string]string{"a.txt": "alpha\n"})
	read := calls(tc("read_file", `{"path":"a.txt"}`))
	edit := calls(tc("edit_file", `{"path":"a.txt","old_string":"alpha","new_string":"omega"}`))
	arrived := make(chan struct{})
	// Round 2 stalls (the kill lands while it waits); a cancelled request
	// uses up its entry, so the resumed round 2 gets the edit.
	stall := llmtest.Turn{Dynamic: func(llmtest.Recorded) llmtest.Turn {
		close(arrived)
		return llmtest.Turn{Text: "too late", Latency: llmtest.Duration(time.Minute)}
	}}
	srv := llmtest.New(script(kind("root", read, stall, edit, say("edited"))))
	defer srv.Close()
	o := options(t, srv, ws, "change alpha to omega", &actors.Recorder{})
	o.Settings = noPlan()
	o.Models.Default = "model-a"
	ctx, cancel := context.WithCancel(t.Context())
	team, err := actors.Start(ctx, o)
	must(t, err)
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("round 2's request never arrived")
	}
	cancel() // mid model call of round 2: a.txt was read in round 1
	if _, err := team.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	cp, err := actors.FindCheckpoint(stateOf(t, ws), o.Run)
	must(t, err)
	if cp.Model != "model-a" {
		t.Fatalf("checkpoint model %q", cp.Model)
	}
	o = options(t, srv, ws, "", &actors.Recorder{})
	o.Settings = noPlan()
	o.Models.Default = "model-b" // the configured default changed meanwhile
	o.Resume = cp
	res := run(t, o)
	if res.Status != actors.StatusCompleted || res.Text != "edited" {
		t.Fatalf("resumed: %+v", res.AgentResult)
	}
	reqs := srv.Requests()
	if n := len(reqs); n != 4 {
		t.Fatalf("%d requests, want 4", n)
	}
	for _, r := range reqs[2:] {
		if r.Model != "model-a" {
			t.Errorf("resumed request on model %q, want model-a", r.Model)
		}
	}
	if got := lastTool(reqs[3]); strings.Contains(got, "has not been read") || !strings.Contains(got, "a.txt") {
		t.Errorf("edit after resume: %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "omega\n" {
		t.Errorf("a.txt = %q", b)
	}

	// A caller that sets the checkpoint's model switches the resumed root.
	srv2 := llmtest.New(script(kind("root", say("switched"))))
	defer srv2.Close()
	cp.Model = "model-c"
	o = options(t, srv2, ws, "", &actors.Recorder{})
	o.Settings = noPlan()
	o.Resume = cp
	run(t, o)
	if m := srv2.Requests()[0].Model; m != "model-c" {
		t.Errorf("model after switching: %q", m)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
