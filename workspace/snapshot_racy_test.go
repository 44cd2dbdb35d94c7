package workspace

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// An edit that keeps a file's size and is made in the same second as
// the user's index was written (git's "racy" entry: its stat data
// matches, only its contents tell) is in the snapshot, as git status
// sees it: the snapshot's private copy of the index keeps the user's
// index's time, so git hashes the file again instead of trusting the
// copy's newer time.
func TestSnapshotSeesARacyEdit(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	sh(t, dir, "init", "-q", "-b", "main")
	write(t, dir, map[string]string{"g.go": "var G = 1\n"})
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	must(t, os.Chtimes(filepath.Join(dir, "g.go"), past, past))
	sh(t, dir, "add", "-A")
	sh(t, dir, "commit", "-q", "-m", "first")
	write(t, dir, map[string]string{"g.go": "var G = 2\n"})
	must(t, os.Chtimes(filepath.Join(dir, "g.go"), past, past))
	must(t, os.Chtimes(filepath.Join(dir, ".git", "index"), past, past))
	_, snap := openSnap(t, dir)
	if got := sh(t, dir, "show", snap.Commit+":g.go"); got != "var G = 2" {
		t.Errorf("the snapshot holds g.go %q, want the edit (var G = 2); git status says:\n%s", got, sh(t, dir, "status", "--porcelain"))
	}
}
