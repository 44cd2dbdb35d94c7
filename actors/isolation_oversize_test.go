package actors_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// A file over agent.max_change_bytes is never silently dropped: the
// worker's other edit lands, the big file is named with its size in the
// run's changes (run --json "oversize"), its worktree is kept holding it,
// and the workspace never sees it.
func TestOversizeFileIsReportedAndKept(t *testing.T) {
	ws := gitRepo(t, map[string]string{"g.go": "package p\n\nvar G = 1\n"})
	res := loneWorkerRunLimit(t, ws, 64,
		calls(tc("read_file", `{"path":"g.go"}`)),
		calls(tc("edit_file", `{"path":"g.go","old_string":"G = 1","new_string":"G = 3"}`),
			tc("write_file", `{"path":"big.txt","content":"`+strings.Repeat("x", 100)+`"}`)),
		say("done"))
	if len(res.Changes) != 1 {
		t.Fatalf("changes %+v, want one", res.Changes)
	}
	c := res.Changes[0]
	if c.Status != messages.ChangeStatusApplied || len(c.Oversize) != 1 || c.Oversize[0] != (messages.OversizeFile{Path: "big.txt", Bytes: 100}) {
		t.Fatalf("outcome %+v, want applied with big.txt (100 bytes) oversize", c)
	}
	if g, _ := os.ReadFile(filepath.Join(ws, "g.go")); !strings.Contains(string(g), "G = 3") {
		t.Errorf("the edit beside it did not land: %q", g)
	}
	if _, err := os.Lstat(filepath.Join(ws, "big.txt")); err == nil {
		t.Error("the oversize file reached the workspace")
	}
	if c.Worktree == "" {
		t.Fatalf("no worktree kept: %+v", c)
	}
	if b, err := os.ReadFile(filepath.Join(c.Worktree, "big.txt")); err != nil || len(b) != 100 {
		t.Errorf("the kept worktree %s lost the big file: %d bytes, %v", c.Worktree, len(b), err)
	}
}
