package tools

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// A file changed outside the tools (an editor, a build) is read afresh:
// the cached read is checked against the file's size, mtime and inode.
func TestCacheSeesChangesMadeOutsideTheTools(t *testing.T) {
	t.Parallel()
	p, read := cachedRead(t)
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

// A change that keeps the size and the inode (the same number of bytes
// written in place) is still seen, by the mtime.
func TestCacheSeesAnInPlaceChangeOfTheSameSize(t *testing.T) {
	t.Parallel()
	p, read := cachedRead(t)
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0) // in place: same inode
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("new content\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// A coarse file system clock could leave the mtime as it was: set one
	// that surely differs.
	if err := os.Chtimes(p, before.ModTime(), before.ModTime().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() != before.Size() || !os.SameFile(before, after) || after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("the change is not the one under test: size %d→%d, same inode %v, mtime %v→%v",
			before.Size(), after.Size(), os.SameFile(before, after), before.ModTime(), after.ModTime())
	}
	if r := read(); r.Cached || !strings.Contains(r.Text, "new content") {
		t.Errorf("after a same-size change in place: cached=%v %q", r.Cached, r.Text)
	}
}

// cachedRead writes a.txt ("old content") and reads it twice through
// read_file, the second time from the cache; it returns the file's path
// and the read.
func cachedRead(t *testing.T) (string, func() Result) {
	t.Helper()
	s := newTestSession(t)
	p := writeFile(t, s, "a.txt", "old content\n")
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
	return p, read
}
