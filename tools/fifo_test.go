package tools

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe never makes a tool wait: grep and read_file refuse it by
// name, and walks (grep over the tree, include naming it) skip it.
func TestFIFONeverBlocks(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "a.txt", "hello\n")
	if err := syscall.Mkfifo(filepath.Join(s.Workspace.Root(), "pipe"), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, c := range []struct {
		tool Tool
		args string
		want string
	}{
		{Grep(), `{"pattern":"hello","path":"pipe"}`, "pipe is a named pipe (FIFO), not a regular file"},
		{Grep(), `{"pattern":"hello","include":"pipe"}`, "No matches for hello"},
		{Grep(), `{"pattern":"hello","mode":"content"}`, "a.txt:1: hello"},
		{ReadFile(), `{"path":"pipe"}`, "pipe is a named pipe (FIFO), not a regular file"},
	} {
		done := make(chan Result, 1)
		go func() { done <- runTool(t, c.tool, s, c.args) }()
		select {
		case r := <-done:
			if !strings.Contains(r.Text, c.want) {
				t.Errorf("%s %s: %q, want %q", c.tool.Spec().Name, c.args, r.Text, c.want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s %s blocked on the pipe", c.tool.Spec().Name, c.args)
		}
	}
}
