package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// A file changed outside the tools (an editor, a build) is read afresh:
// the cached read is checked against the file's size, mtime and inode.
func TestCacheSeesChangesMadeOutsideTheTools(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "a.txt", "old content\n")
	ex := &Executor{Tools: NewRegistry(ReadFile()), Session: s}
	read := func() Result {
		return ex.Run(t.Context(), []messages.ToolCall{{ID: "1", Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)}})[0]
	}
	if r := read(); !strings.Contains(r.Text, "old content") {
		t.Fatalf("first read %q", r.Text)
	}
	if r := read(); !r.Cached {
		t.Fatal("the second read was not served from the cache")
	}
	p := filepath.Join(s.Workspace.Root(), "a.txt")
	if err := os.WriteFile(p+".new", []byte("new content, longer\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil { // a new inode, as editors save
		t.Fatal(err)
	}
	if r := read(); r.Cached || !strings.Contains(r.Text, "new content") {
		t.Errorf("after an outside change: cached=%v %q", r.Cached, r.Text)
	}
}
