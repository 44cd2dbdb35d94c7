package testfiles

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// LFSOID is the git lfs object ID of content: its SHA-256 in hex.
func LFSOID(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}

// LFSLanded checks the user's repository ws after a land of files (path
// → content, all git lfs files: a.bin changed, c.bin new) as the user's
// git and git lfs see it (HOME the user's): the contents on disk, each
// object in .git/lfs, git's and git lfs's status, pointers in the index
// once added, and git lfs fsck clean after a commit.
func LFSLanded(t testing.TB, ws string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		if b, err := os.ReadFile(filepath.Join(ws, p)); err != nil || string(b) != c {
			t.Errorf("%s landed as %q (%v), want %q", p, b, err, c)
		}
		oid := LFSOID(c)
		if _, err := os.Stat(filepath.Join(ws, ".git", "lfs", "objects", oid[:2], oid[2:4], oid)); err != nil {
			t.Errorf("the object of %s is not in the user's .git/lfs: %v", p, err)
		}
	}
	if st := UserGit(t, ws, "status", "--porcelain"); st != "M a.bin\n?? c.bin" {
		t.Errorf("git status:\n%s", st)
	}
	if st := UserGit(t, ws, "lfs", "status", "--porcelain"); !strings.Contains(st, "a.bin") {
		t.Errorf("git lfs status:\n%s", st)
	}
	UserGit(t, ws, "add", "-A")
	for p := range files {
		if idx := UserGit(t, ws, "cat-file", "-p", ":"+p); !strings.HasPrefix(idx, "version https://git-lfs") {
			t.Errorf("the index's %s is %q, want an LFS pointer", p, idx)
		}
	}
	UserGit(t, ws, "commit", "-q", "-m", "landed")
	if fsck := UserGit(t, ws, "lfs", "fsck"); !strings.Contains(fsck, "OK") {
		t.Errorf("git lfs fsck: %s", fsck)
	}
}
