package builtin

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/shell"
)

// runCalls runs calls through an executor over all tools, in one turn.
func runCalls(t *testing.T, s *tools.Session, approved map[string]string, cs ...messages.ToolCall) []tools.Result {
	t.Helper()
	ex := &tools.Executor{Tools: tools.NewRegistry(All()...), Session: s, Approved: approved}
	return ex.Run(t.Context(), cs)
}

func call(id, name string, args any) messages.ToolCall {
	b, _ := json.Marshal(args)
	return messages.ToolCall{ID: id, Name: name, Args: b}
}

func readFileText(t *testing.T, s *tools.Session, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Workspace.Root(), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The file tools put the diff of what they changed in their metadata; the
// text the model reads stays a confirmation.
func TestFileToolsReportTheirDiff(t *testing.T) {
	s := newTestSession(t)
	writeFile(t, s, "a.txt", "one\ntwo\nthree\n")
	writeFile(t, s, "old/name.txt", "alpha\nbeta\ngamma\n")
	writeFile(t, s, "gone.txt", "bye\nnow\n")
	res := runCalls(t, s, nil, call("r", tools.NameReadFile, map[string]any{"path": "a.txt"}),
		call("r2", tools.NameReadFile, map[string]any{"path": "gone.txt"}))
	if res[0].IsError || res[1].IsError {
		t.Fatal(res)
	}
	cases := []struct {
		name      string
		call      messages.ToolCall
		text      string
		diff      string
		add, rem  int
		wantBlind bool
	}{
		{"edit_file", call("e", tools.NameEditFile, map[string]any{"path": "a.txt", "old_string": "two", "new_string": "TWO"}),
			"Edited a.txt: replaced 1 occurrence(s) (lines 2-2)",
			"--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n", 1, 1, false},
		{"write_file new", call("w", tools.NameWriteFile, map[string]any{"path": "dir/new.txt", "content": "x\ny\n"}),
			"Wrote 2 lines to dir/new.txt", "--- /dev/null\n+++ b/dir/new.txt\n@@ -0,0 +1,2 @@\n+x\n+y\n", 2, 0, false},
		{"write_file replace", call("w2", tools.NameWriteFile, map[string]any{"path": "a.txt", "content": "one\n"}),
			"Wrote 1 lines to a.txt", "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1 @@\n one\n-TWO\n-three\n", 0, 2, false},
		{"apply_patch", call("p", tools.NameApplyPatch, map[string]any{"patch": "*** Begin Patch\n*** Update File: old/name.txt\n*** Move to: new/name.txt\n@@\n alpha\n-beta\n+BETA\n gamma\n*** Delete File: gone.txt\n*** End Patch"}),
			"R old/name.txt -> new/name.txt\nD gone.txt",
			"--- a/old/name.txt\n+++ b/new/name.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n" +
				"--- a/gone.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-bye\n-now\n", 1, 3, true},
	}
	for _, c := range cases {
		r := runCalls(t, s, nil, c.call)[0]
		if r.IsError || r.Text != c.text {
			t.Fatalf("%s: %q", c.name, r.Text)
		}
		if r.Metadata["diff"] != c.diff || r.Metadata["lines_added"] != c.add || r.Metadata["lines_removed"] != c.rem {
			t.Errorf("%s: metadata %v\nwant diff\n%s", c.name, r.Metadata, c.diff)
		}
		if _, cut := r.Metadata["diff_cut"]; cut {
			t.Errorf("%s: a small diff was cut", c.name)
		}
		if (r.Metadata["blind"] == true) != c.wantBlind {
			t.Errorf("%s: blind = %v, want %v", c.name, r.Metadata["blind"], c.wantBlind)
		}
	}
}

// A large change's diff is cut at 8 KiB, says so, and still counts every
// line.
func TestDiffIsCapped(t *testing.T) {
	s := newTestSession(t)
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	r := runCalls(t, s, nil, call("w", tools.NameWriteFile, map[string]any{"path": "big.txt", "content": b.String()}))[0]
	diff, _ := r.Metadata["diff"].(string)
	if r.IsError || r.Metadata["diff_cut"] != true || r.Metadata["lines_added"] != 2000 || len(diff) > tools.MaxDiffBytes+100 {
		t.Fatalf("text %q, diff_cut %v, lines_added %v, %d bytes", r.Text, r.Metadata["diff_cut"], r.Metadata["lines_added"], len(diff))
	}
	if !strings.HasSuffix(diff, "more lines not shown]\n") || strings.Contains(r.Text, "line 1") {
		t.Errorf("cut diff ends %q; text %q", diff[len(diff)-60:], r.Text)
	}
}

// A preview shows the call's diff and changes nothing: no file, no
// folder, no read registered.
func TestPreviewWritesNothing(t *testing.T) {
	s := newTestSession(t)
	writeFile(t, s, "a.txt", "one\ntwo\n")
	runCalls(t, s, nil, call("r", tools.NameReadFile, map[string]any{"path": "a.txt"}))
	reg := tools.NewRegistry(All()...)
	for _, c := range []struct {
		tool string
		args any
		diff string
	}{
		{tools.NameEditFile, map[string]any{"path": "a.txt", "old_string": "two", "new_string": "2"}, "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"},
		{tools.NameEditFile, map[string]any{"path": "sub/n.txt", "old_string": "", "new_string": "n\n"}, "--- /dev/null\n+++ b/sub/n.txt\n@@ -0,0 +1 @@\n+n\n"},
		{tools.NameWriteFile, map[string]any{"path": "deep/er/w.txt", "content": "w\n"}, "--- /dev/null\n+++ b/deep/er/w.txt\n@@ -0,0 +1 @@\n+w\n"},
		{tools.NameApplyPatch, map[string]any{"patch": "*** Begin Patch\n*** Add File: p/q.txt\n+q\n*** Delete File: a.txt\n*** End Patch"},
			"--- /dev/null\n+++ b/p/q.txt\n@@ -0,0 +1 @@\n+q\n--- a/a.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n"},
	} {
		tool, _ := reg.Get(c.tool)
		args, _ := json.Marshal(c.args)
		p, ok := tools.PreviewCall(t.Context(), s, tool, args)
		if !ok || p.Err != "" || p.Text != c.diff || p.Fingerprint == "" {
			t.Errorf("%s: %+v\nwant\n%s", c.tool, p, c.diff)
		}
	}
	entries, _ := os.ReadDir(s.Workspace.Root())
	if len(entries) != 1 || readFileText(t, s, "a.txt") != "one\ntwo\n" {
		t.Errorf("a preview changed the workspace: %v", entries)
	}
	for _, rel := range []string{"sub/n.txt", "deep/er/w.txt", "p/q.txt"} {
		if s.Reads.WasRead(filepath.Join(s.Workspace.Root(), rel)) {
			t.Errorf("preview registered %s as read", rel)
		}
	}
	// A call that would fail previews as its error; a read-only tool does
	// not preview.
	tool, _ := reg.Get(tools.NameWriteFile)
	writeFile(t, s, "unread.txt", "u\n")
	if p, ok := tools.PreviewCall(t.Context(), s, tool, json.RawMessage(`{"path":"unread.txt","content":"x"}`)); !ok || !strings.Contains(p.Err, "has not been read") || p.Text != "" {
		t.Errorf("unread: %+v", p)
	}
	if p, ok := tools.PreviewCall(t.Context(), s, tool, json.RawMessage(`{"path":"x.txt"}`)); !ok || !strings.Contains(p.Err, "content") {
		t.Errorf("bad args: %+v", p)
	}
	rf, _ := reg.Get(tools.NameReadFile)
	if _, ok := tools.PreviewCall(t.Context(), s, rf, json.RawMessage(`{"path":"a.txt"}`)); ok {
		t.Error("read_file previewed")
	}
}

// An approved call writes only the change that was previewed: two edits
// of one file previewed together (as an approval screens a turn before it
// runs) cannot both apply, and the second says why; a file changed on disk
// after the preview fails its read check, or, for an update apply_patch
// makes without a read, the approval check.
func TestApprovedChangeMustMatchThePreview(t *testing.T) {
	s := newTestSession(t)
	writeFile(t, s, "a.txt", "one\ntwo\n")
	runCalls(t, s, nil, call("r", tools.NameReadFile, map[string]any{"path": "a.txt"}))
	reg := tools.NewRegistry(All()...)
	edit, _ := reg.Get(tools.NameEditFile)
	c1 := call("c1", tools.NameEditFile, map[string]any{"path": "a.txt", "old_string": "one", "new_string": "1"})
	c2 := call("c2", tools.NameEditFile, map[string]any{"path": "a.txt", "old_string": "two", "new_string": "2"})
	p1, _ := tools.PreviewCall(t.Context(), s, edit, c1.Args)
	p2, _ := tools.PreviewCall(t.Context(), s, edit, c2.Args)
	res := runCalls(t, s, map[string]string{"c1": p1.Fingerprint, "c2": p2.Fingerprint}, c1, c2)
	if res[0].IsError || res[0].Metadata["diff"] != p1.Text {
		t.Fatalf("first: %+v (preview %q)", res[0], p1.Text)
	}
	if !res[1].IsError || !strings.Contains(res[1].Text, "a.txt changed after the approval prompt showed its diff") {
		t.Fatalf("second: %+v", res[1])
	}
	if got := readFileText(t, s, "a.txt"); got != "1\ntwo\n" {
		t.Errorf("a.txt = %q", got)
	}

	// apply_patch updates need no read, so only the approval check stands
	// between a changed file and the approved diff.
	writeFile(t, s, "b.txt", "x\ny\n")
	pc := call("p", tools.NameApplyPatch, map[string]any{"patch": "*** Begin Patch\n*** Update File: b.txt\n@@\n x\n-y\n+Y\n*** End Patch"})
	patch, _ := reg.Get(tools.NameApplyPatch)
	pp, _ := tools.PreviewCall(t.Context(), s, patch, pc.Args)
	writeFile(t, s, "b.txt", "x\ny\nz\n") // someone else edits it
	r := runCalls(t, s, map[string]string{"p": pp.Fingerprint}, pc)[0]
	if !r.IsError || !strings.Contains(r.Text, "b.txt changed after the approval prompt") || readFileText(t, s, "b.txt") != "x\ny\nz\n" {
		t.Errorf("changed after preview: %+v", r)
	}
	// Unchanged, the approved patch applies.
	writeFile(t, s, "b.txt", "x\ny\n")
	if r := runCalls(t, s, map[string]string{"p": pp.Fingerprint}, pc)[0]; r.IsError || readFileText(t, s, "b.txt") != "x\nY\n" {
		t.Errorf("unchanged: %+v", r)
	}
}

// A write to a file the agent has not read (or not since it changed) is
// a blind write: write_file and edit_file refuse it, apply_patch allows an
// update; each says blind: true in its metadata.
func TestBlindWritesAreFlagged(t *testing.T) {
	s := newTestSession(t)
	writeFile(t, s, "a.txt", "one\n")
	writeFile(t, s, "b.txt", "bee\n")
	check := func(name string, r tools.Result, isErr, blind bool) {
		t.Helper()
		if r.IsError != isErr || (r.Metadata["blind"] == true) != blind {
			t.Errorf("%s: error %v blind %v: %q", name, r.IsError, r.Metadata["blind"], r.Text)
		}
	}
	check("write unread", runCalls(t, s, nil, call("1", tools.NameWriteFile, map[string]any{"path": "a.txt", "content": "x"}))[0], true, true)
	check("edit unread", runCalls(t, s, nil, call("2", tools.NameEditFile, map[string]any{"path": "a.txt", "old_string": "one", "new_string": "1"}))[0], true, true)
	check("delete unread", runCalls(t, s, nil, call("3", tools.NameApplyPatch, map[string]any{"patch": "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch"}))[0], true, true)
	check("patch unread", runCalls(t, s, nil, call("4", tools.NameApplyPatch, map[string]any{"patch": "*** Begin Patch\n*** Update File: b.txt\n@@\n-bee\n+B\n*** End Patch"}))[0], false, true)
	check("new file", runCalls(t, s, nil, call("5", tools.NameWriteFile, map[string]any{"path": "c.txt", "content": "c"}))[0], false, false)
	runCalls(t, s, nil, call("6", tools.NameReadFile, map[string]any{"path": "a.txt"}))
	check("edit read", runCalls(t, s, nil, call("7", tools.NameEditFile, map[string]any{"path": "a.txt", "old_string": "one", "new_string": "1"}))[0], false, false)
	check("patch after own write", runCalls(t, s, nil, call("8", tools.NameApplyPatch, map[string]any{"patch": "*** Begin Patch\n*** Update File: b.txt\n@@\n-B\n+b\n*** End Patch"}))[0], false, false)
	writeFile(t, s, "a.txt", "changed\n")
	check("edit stale", runCalls(t, s, nil, call("9", tools.NameEditFile, map[string]any{"path": "a.txt", "old_string": "changed", "new_string": "c"}))[0], true, true)
	check("bad match is not blind", runCalls(t, s, nil, call("10", tools.NameEditFile, map[string]any{"path": "c.txt", "old_string": "zzz", "new_string": "c"}))[0], true, false)
}

// The executor says which calls of a turn may run at the same time.
func TestExecutorReportsParallelCalls(t *testing.T) {
	s := newTestSession(t)
	writeFile(t, s, "a.txt", "a\n")
	writeFile(t, s, "b.txt", "b\n")
	runCalls(t, s, nil, call("r", tools.NameReadFile, map[string]any{"path": "a.txt"}))
	cases := []struct {
		name  string
		calls []messages.ToolCall
		want  []bool
	}{
		{"two reads", []messages.ToolCall{call("1", tools.NameReadFile, map[string]any{"path": "a.txt"}), call("2", tools.NameReadFile, map[string]any{"path": "b.txt"})}, []bool{true, true}},
		{"one call", []messages.ToolCall{call("1", tools.NameReadFile, map[string]any{"path": "a.txt"})}, []bool{false}},
		{"edits of one file", []messages.ToolCall{call("1", tools.NameEditFile, map[string]any{"path": "a.txt", "old_string": "a", "new_string": "b"}),
			call("2", tools.NameEditFile, map[string]any{"path": "a.txt", "old_string": "b", "new_string": "a"})}, []bool{false, false}},
		{"shells", []messages.ToolCall{call("1", shell.NameShell, map[string]any{"command": "true"}), call("2", shell.NameShell, map[string]any{"command": "true"})}, []bool{false, false}},
		{"edit, read of the same file, read of another", []messages.ToolCall{call("1", tools.NameEditFile, map[string]any{"path": "a.txt", "old_string": "a", "new_string": "b"}),
			call("2", tools.NameReadFile, map[string]any{"path": "a.txt"}), call("3", tools.NameReadFile, map[string]any{"path": "b.txt"})}, []bool{true, true, true}},
		{"unknown tool", []messages.ToolCall{call("1", tools.NameReadFile, map[string]any{"path": "a.txt"}), call("2", "nope", map[string]any{})}, []bool{false, false}},
	}
	for _, c := range cases {
		got := make([]bool, len(c.calls))
		ex := &tools.Executor{Tools: tools.NewRegistry(All()...), Session: s, Hooks: tools.Hooks{OnStart: func(ci tools.CallInfo) { got[ci.Index] = ci.Parallel }}}
		ex.Run(t.Context(), c.calls)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: parallel %v, want %v", c.name, got, c.want)
		}
	}
}
