//go:build linux

package actors_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/overlay"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/messages"
)

// lfsRepo is a repository using Git LFS as its users set it up (git lfs
// install in the user's HOME, git lfs track, the objects committed into
// the user's .git/lfs): a.bin through LFS, g.go not.
func lfsRepo(t *testing.T) string {
	t.Helper()
	peer.Need(t, "git-lfs")
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, name := range []string{"GIT_CONFIG_GLOBAL", "XDG_CONFIG_HOME"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	testfiles.UserGit(t, home, "lfs", "install")
	ws := workspace(t, map[string]string{"a.bin": "lfs one\nlfs two\n", "g.go": "package p\n"})
	testfiles.UserGit(t, ws, "init", "-q", "-b", "main")
	testfiles.UserGit(t, ws, "lfs", "track", "*.bin")
	testfiles.UserGit(t, ws, "add", "-A")
	testfiles.UserGit(t, ws, "commit", "-q", "-m", "first")
	return ws
}

// A worker in a worktree of a repository using Git LFS, of either kind:
// its shell and its file tools see the LFS file's content (smudged by
// the user's git lfs, confined), it edits it and adds another; after the
// land the user's files hold the content, git status and git lfs
// status show an ordinary LFS change whose objects are in the user's
// .git/lfs, git add stages pointers and git lfs fsck is clean.
func TestWorkerEditsLFSFiles(t *testing.T) {
	for _, wk := range []string{"checkout", "overlay"} {
		t.Run(wk, func(t *testing.T) {
			if _, err := overlay.Shared(filepath.Join(os.TempDir(), "troupe-actors-overlay-test")); err != nil && wk == "overlay" {
				peer.Missing(t, "overlay mounts", "%v", err)
			}
			ws := lfsRepo(t)
			res := loneWorkerRunIn(t, ws, wk, 0,
				calls(tc("shell", `{"command":"cat a.bin > seen.txt && printf 'a new lfs file\\n' > c.bin && findmnt -n -o FSTYPE -T . > fstype.txt"}`)),
				calls(tc("read_file", `{"path":"a.bin"}`)),
				calls(tc("edit_file", `{"path":"a.bin","old_string":"lfs two","new_string":"lfs TWO"}`)),
				say("done"),
			)
			if len(res.Changes) != 1 || res.Changes[0].Status != messages.ChangeStatusApplied {
				t.Fatalf("changes %+v, want one applied", res.Changes)
			}
			fstype := "overlay\n"
			if wk == "checkout" {
				fstype = ""
			}
			for f, want := range map[string]string{"seen.txt": "lfs one\nlfs two\n", "a.bin": "lfs one\nlfs TWO\n", "c.bin": "a new lfs file\n", "fstype.txt": fstype} {
				b, err := os.ReadFile(filepath.Join(ws, f))
				if f == "fstype.txt" && want == "" {
					if string(b) == "overlay\n" {
						t.Errorf("a checkout worktree is an overlay")
					}
					continue
				}
				if err != nil || string(b) != want {
					t.Errorf("%s in the workspace: %q, %v; want %q", f, b, err, want)
				}
			}
			checkLFSLanded(t, ws, "lfs one\nlfs TWO\n", "a new lfs file\n")
		})
	}
}

// checkLFSLanded checks the user's repository after a land of edited
// (a.bin) and added (c.bin) LFS files, as the user's git and git lfs
// see it.
func checkLFSLanded(t *testing.T, ws string, contents ...string) {
	t.Helper()
	for _, c := range contents {
		sum := sha256.Sum256([]byte(c))
		oid := hex.EncodeToString(sum[:])
		if _, err := os.Stat(filepath.Join(ws, ".git", "lfs", "objects", oid[:2], oid[2:4], oid)); err != nil {
			t.Errorf("the object of %q is not in the user's .git/lfs: %v", c, err)
		}
	}
	if st := testfiles.UserGit(t, ws, "status", "--porcelain", "--", "a.bin", "c.bin"); st != "M a.bin\n?? c.bin" {
		t.Errorf("git status:\n%s", st)
	}
	if st := testfiles.UserGit(t, ws, "lfs", "status", "--porcelain"); !strings.Contains(st, "a.bin") {
		t.Errorf("git lfs status:\n%s", st)
	}
	testfiles.UserGit(t, ws, "add", "a.bin", "c.bin")
	for _, p := range []string{"a.bin", "c.bin"} {
		if idx := testfiles.UserGit(t, ws, "cat-file", "-p", ":"+p); !strings.HasPrefix(idx, "version https://git-lfs") {
			t.Errorf("the index's %s is %q, want an LFS pointer", p, idx)
		}
	}
	testfiles.UserGit(t, ws, "commit", "-q", "-m", "landed")
	if fsck := testfiles.UserGit(t, ws, "lfs", "fsck"); !strings.Contains(fsck, "OK") {
		t.Errorf("git lfs fsck: %s", fsck)
	}
}
