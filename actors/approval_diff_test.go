package actors_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// An approval of a file edit shows the diff before it asks; the diff in
// approval.requested is the one tool.finished reports once the edit ran.
// Two edits of one file in one turn are both previewed against the file
// as it was, so the second, once the first has run, is no longer the
// change approved: it writes nothing and says why.
func TestApprovalShowsTheDiffFirst(t *testing.T) {
	ws := workspace(t, map[string]string{"a.txt": "one\ntwo\nthree\n"})
	srv := llmtest.New(script(kind("root",
		calls(tc("read_file", `{"path":"a.txt"}`)),
		calls(tc("edit_file", `{"path":"a.txt","old_string":"two","new_string":"TWO"}`),
			tc("edit_file", `{"path":"a.txt","old_string":"three","new_string":"3"}`)),
		say("done"))))
	defer srv.Close()
	rec := &actors.Recorder{}
	o := options(t, srv, ws, "edit", rec)
	o.Settings = noPlan()
	o.Settings.Approval = map[string]string{"edit_file": actors.PolicyAsk}
	var prompt strings.Builder
	o.Approver = &actors.TerminalApprover{In: strings.NewReader("y\ny\n"), Out: &prompt}
	run(t, o)

	want1 := "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
	shown := prompt.String()
	if i, j := strings.Index(shown, "    -two\n    +TWO\n"), strings.Index(shown, "Allow? [y/N]"); i < 0 || j < i {
		t.Errorf("the prompt does not show the diff before asking:\n%s", shown)
	}
	asked := rec.OfType(messages.EvtApprovalRequested)
	if len(asked) != 2 {
		t.Fatalf("%d approval.requested events", len(asked))
	}
	if d, _ := messages.DecodeAs[messages.ApprovalRequested](asked[0]); d.Diff != want1 {
		t.Errorf("approval.requested diff %q, want %q", d.Diff, want1)
	}
	var finished []messages.ToolFinished
	for _, ev := range rec.OfType(messages.EvtToolFinished) {
		if d, _ := messages.DecodeAs[messages.ToolFinished](ev); d.Tool == "edit_file" {
			finished = append(finished, d)
		}
	}
	if len(finished) != 2 || finished[0].Diff != want1 || finished[0].Metadata["lines_added"] != 1.0 || finished[0].Metadata["diff"] != nil {
		t.Fatalf("tool.finished of the first edit: %+v", finished)
	}
	if !finished[1].IsError || finished[1].Diff != "" {
		t.Errorf("second edit: %+v", finished[1])
	}
	got := toolResults(srv.Requests()[2])
	if len(got) != 2 || !strings.HasPrefix(got[0], "Edited a.txt") || !strings.Contains(got[1], "changed after the approval prompt showed its diff") {
		t.Errorf("results %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "one\nTWO\nthree\n" {
		t.Errorf("a.txt = %q", b)
	}
}

// A call whose preview fails (here an unread file) is still asked, with
// the reason there is no diff; it then fails on its own.
func TestApprovalWithoutADiffSaysWhy(t *testing.T) {
	ws := workspace(t, map[string]string{"a.txt": "one\n"})
	srv := llmtest.New(script(kind("root", calls(tc("write_file", `{"path":"a.txt","content":"x"}`)), say("done"))))
	defer srv.Close()
	o := options(t, srv, ws, "write", &actors.Recorder{})
	o.Settings = noPlan()
	o.Settings.Approval = map[string]string{"write_file": actors.PolicyAsk}
	var prompt strings.Builder
	o.Approver = &actors.TerminalApprover{In: strings.NewReader("y\n"), Out: &prompt}
	run(t, o)
	if !strings.Contains(prompt.String(), "wants to run write_file") || strings.Contains(prompt.String(), "The change it would make") ||
		!strings.Contains(prompt.String(), "No diff to show: file a.txt has not been read in this session") {
		t.Errorf("prompt:\n%s", prompt.String())
	}
	if got := lastTool(srv.Requests()[1]); !strings.Contains(got, "has not been read") {
		t.Errorf("result %q", got)
	}
}

func TestDiffBlockEscapesControlCharacters(t *testing.T) {
	got := actors.DiffBlock(actors.ApprovalRequest{Diff: "+\x1b[2Jhi\tthere\r\n"})
	if got != "The change it would make:\n    +\\x1b[2Jhi\tthere\n" {
		t.Errorf("%q", got)
	}
	if actors.DiffBlock(actors.ApprovalRequest{}) != "" {
		t.Error("no diff, yet a block")
	}
}
