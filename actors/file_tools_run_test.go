package actors_test

import (
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// In an agent run, read_file's ranges and start_line/end_line reach the
// model as they do through tools call, and apply_patch's tool.finished
// event carries its diff and line counts.
func TestRangesAndDiffsInAnAgentRun(t *testing.T) {
	ws := workspace(t, map[string]string{"a.txt": "1\n2\n3\n4\n5\n6\n"})
	srv := llmtest.New(script(kind("root",
		calls(tc("read_file", `{"path":"a.txt","ranges":[[5,6],[1,2]]}`), tc("read_file", `{"path":"a.txt","start_line":3,"end_line":3}`)),
		calls(tc("apply_patch", `{"patch":"*** Begin Patch\n*** Update File: a.txt\n@@\n 2\n-3\n+three\n 4\n*** End Patch"}`)),
		say("done"))))
	defer srv.Close()
	rec := &actors.Recorder{}
	o := options(t, srv, ws, "read and patch", rec)
	o.Settings = noPlan()
	run(t, o)
	got := toolResults(srv.Requests()[1])
	if len(got) != 2 || got[0] != "L1: 1\nL2: 2\n...\nL5: 5\nL6: 6" || got[1] != "L3: 3\n[truncated: 6 total lines in file; use offset=4 to continue]" {
		t.Errorf("reads %q", got)
	}
	if got := lastTool(srv.Requests()[2]); got != "M a.txt" {
		t.Errorf("patch result %q", got)
	}
	var patch *messages.ToolFinished
	for _, ev := range rec.OfType(messages.EvtToolFinished) {
		if d, _ := messages.DecodeAs[messages.ToolFinished](ev); d.Tool == "apply_patch" {
			patch = &d
		}
	}
	want := "--- a/a.txt\n+++ b/a.txt\n@@ -1,6 +1,6 @@\n 1\n 2\n-3\n+three\n 4\n 5\n 6\n"
	if patch == nil || patch.Diff != want || patch.Metadata["lines_added"] != 1.0 || patch.Metadata["lines_removed"] != 1.0 || patch.Metadata["blind"] != nil {
		t.Errorf("apply_patch event %+v\nwant diff %q", patch, want)
	}
	if strings.Contains(lastTool(srv.Requests()[2]), "---") {
		t.Error("the diff reached the model")
	}
}
