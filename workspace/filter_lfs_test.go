package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/messages"
)

// Real Git LFS (the git-lfs program, set up as its users set it up: git
// lfs install writes the filter into the user's global config, git lfs
// track the attribute, git commit stores the objects in the user's
// .git/lfs) through troupe's worktrees, captures and lands.

// lfsCase is a user's repository using Git LFS: a.bin and big.bin
// tracked by LFS, b.txt not; the user's HOME with a key in ~/.ssh.
type lfsCase struct {
	root, home string
	probe      net.Listener // a loopback server a filter must not reach
}

// lfsContent is the content of a.bin as committed.
const lfsContent = "lfs one\nlfs two\nlfs three\n"

// newLFSCase sets up an lfsCase. The user's git has run the filter
// unconfined; from here on the user's global config runs git lfs
// through a wrapper (confinedLFS) that first tries what a compromised
// filter would.
func newLFSCase(t *testing.T, setup func(root string)) lfsCase {
	t.Helper()
	needSandbox(t)
	peer.Need(t, "git-lfs")
	peer.Need(t, "python3")
	c := lfsCase{home: t.TempDir(), root: t.TempDir()}
	t.Setenv("HOME", c.home)
	for _, name := range []string{"GIT_CONFIG_GLOBAL", "XDG_CONFIG_HOME"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	testfiles.UserGit(t, c.home, "lfs", "install")
	testfiles.UserGit(t, c.root, "init", "-q", "-b", "main")
	testfiles.UserGit(t, c.root, "lfs", "track", "*.bin")
	write(t, c.root, map[string]string{"a.bin": lfsContent, "big.bin": strings.Repeat("0123456789abcdef", 1<<16),
		"b.txt": "plain\n", ".troupe/.gitignore": "*\n"})
	testfiles.UserGit(t, c.root, "add", "-A")
	testfiles.UserGit(t, c.root, "commit", "-q", "-m", "first")
	if setup != nil {
		setup(c.root)
	}
	// a.bin's stat data no longer matches the index (as after a touch, or
	// a commit in the same second as the checkout): a snapshot's git add,
	// which runs no filter, reads it again.
	future := time.Now().Add(time.Hour)
	must(t, os.Chtimes(filepath.Join(c.root, "a.bin"), future, future))
	must(t, os.MkdirAll(filepath.Join(c.home, ".ssh"), 0o700))
	must(t, os.WriteFile(filepath.Join(c.home, ".ssh", "id_test"), []byte("SECRET KEY\n"), 0o600))
	var err error
	c.probe, err = net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { c.probe.Close() })
	c.useWrapper(t)
	return c
}

// useWrapper makes the user's global config run git lfs through a
// script that, before it does its job, writes outside its sandbox
// ($HOME, the user's .git/config), copies the user's key into the LFS
// storage it may write, and connects to the probe.
func (c lfsCase) useWrapper(t *testing.T) {
	t.Helper()
	port := strconv.Itoa(c.probe.Addr().(*net.TCPAddr).Port)
	script := filepath.Join(c.home, "lfs-wrap.sh")
	must(t, os.WriteFile(script, []byte("#!/bin/sh\n"+
		"echo escaped > \"$HOME/escaped\" 2>/dev/null\n"+
		"echo '[escaped]' >> "+shellQuote(filepath.Join(c.root, ".git", "config"))+" 2>/dev/null\n"+
		"cat \"$HOME/.ssh/id_test\" > "+shellQuote(filepath.Join(c.root, ".git", "lfs", "leak"))+" 2>/dev/null\n"+
		"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", "+port+"), 2)' 2>/dev/null\n"+
		"exec \"$@\"\n"), 0o755))
	testfiles.UserGit(t, c.home, "config", "--global", "filter.lfs.process", script+" git-lfs filter-process")
	testfiles.UserGit(t, c.home, "config", "--global", "filter.lfs.clean", script+" git-lfs clean -- %f")
	testfiles.UserGit(t, c.home, "config", "--global", "filter.lfs.smudge", script+" git-lfs smudge -- %f")
}

// checkConfined checks that no filter troupe ran left the sandbox: no
// file in $HOME, the user's .git/config unchanged, the key unread, the
// probe not reached. Then the user's config runs git lfs itself again.
func (c lfsCase) checkConfined(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(c.home, "escaped")); err == nil {
		t.Error("a filter wrote in $HOME")
	}
	if conf := read(t, c.root, ".git/config"); strings.Contains(conf, "escaped") {
		t.Errorf("a filter wrote the user's .git/config:\n%s", conf)
	}
	if leak := read(t, c.root, ".git/lfs/leak"); strings.Contains(leak, "SECRET") {
		t.Error("a filter read the user's key")
	}
	must(t, c.probe.(*net.TCPListener).SetDeadline(time.Now()))
	if conn, err := c.probe.Accept(); err == nil {
		conn.Close()
		t.Error("a filter reached a loopback server")
	}
	testfiles.UserGit(t, c.home, "lfs", "install", "--force")
}

// lfsObject is where the user's LFS storage keeps content.
func lfsObject(root, content string) string {
	sum := sha256.Sum256([]byte(content))
	oid := hex.EncodeToString(sum[:])
	return filepath.Join(root, ".git", "lfs", "objects", oid[:2], oid[2:4], oid)
}

// A worker's worktree, of either kind, holds the LFS files as the
// user's checkout does (their content, smudged by git lfs run
// confined); its edit of one and a new one are captured as LFS pointers
// with their objects stored in the user's .git/lfs, and land as content
// on disk: git status and git lfs status show an ordinary LFS change,
// git add stages pointers, git lfs fsck is clean. The filter never left
// its sandbox.
func TestLFSWorktreeCapturesAndLands(t *testing.T) {
	for _, kind := range []string{WorktreesCheckout, WorktreesOverlay} {
		t.Run(kind, func(t *testing.T) {
			c := newLFSCase(t, nil)
			r, err := Open(t.Context(), c.root, Options{Worktrees: kind})
			must(t, err)
			t.Cleanup(func() { _ = r.Close(context.Background()) })
			snap, err := r.Snapshot(t.Context())
			must(t, err)
			w, err := r.NewWorktree(t.Context(), snap, "w")
			if err != nil && kind == WorktreesOverlay && os.Getenv("CI") != "true" && strings.Contains(err.Error(), "overlay worktrees unavailable") {
				t.Skip(err)
			}
			must(t, err)
			if got := read(t, w.Root(), "a.bin"); got != lfsContent {
				t.Fatalf("the worktree's a.bin = %q, want its content %q", got, lfsContent)
			}
			if kind == WorktreesOverlay {
				if got := inWorktree(t, w, "cat a.bin"); got != lfsContent {
					t.Fatalf("a command in the overlay sees a.bin = %q", got)
				}
			}
			edited := strings.Replace(lfsContent, "two", "TWO", 1)
			write(t, w.Root(), map[string]string{"a.bin": edited, "c.bin": "a new lfs file\n"})
			cs, err := w.Capture(t.Context())
			must(t, err)
			must(t, w.Remove(t.Context()))
			for _, p := range []string{"a.bin", "c.bin"} {
				if blob := sh(t, c.root, "cat-file", "-p", cs.Tree+":"+p); !strings.HasPrefix(blob, "version https://git-lfs.github.com/spec/v1") {
					t.Errorf("the changeset's %s is %q, want an LFS pointer", p, blob)
				}
			}
			for _, content := range []string{edited, "a new lfs file\n"} {
				if _, err := os.Stat(lfsObject(c.root, content)); err != nil {
					t.Errorf("the capture did not store the LFS object in the user's .git/lfs: %v", err)
				}
			}
			out, err := r.Apply(t.Context(), snap, cs, ModeApply, "run1", "w")
			if err != nil || out.Status != messages.ChangeStatusApplied {
				t.Fatalf("apply: %+v %v", out, err)
			}
			if a, n := read(t, c.root, "a.bin"), read(t, c.root, "c.bin"); a != edited || n != "a new lfs file\n" {
				t.Errorf("on disk a.bin = %q, c.bin = %q", a, n)
			}
			c.checkConfined(t)
			c.checkUserSees(t, edited)
		})
	}
}

// checkUserSees checks the landed change as the user's own git and git
// lfs see it, then commits it and runs git lfs fsck.
func (c lfsCase) checkUserSees(t *testing.T, edited string) {
	t.Helper()
	if st := testfiles.UserGit(t, c.root, "status", "--porcelain"); st != "M a.bin\n?? c.bin" {
		t.Errorf("git status:\n%s", st)
	}
	if st := testfiles.UserGit(t, c.root, "lfs", "status", "--porcelain"); !strings.Contains(st, "a.bin") {
		t.Errorf("git lfs status:\n%s", st)
	}
	testfiles.UserGit(t, c.root, "add", "-A")
	sum := sha256.Sum256([]byte(edited))
	if idx := testfiles.UserGit(t, c.root, "cat-file", "-p", ":a.bin"); !strings.Contains(idx, "oid sha256:"+hex.EncodeToString(sum[:])) {
		t.Errorf("the index's a.bin is %q, want the pointer of the edit", idx)
	}
	if idx := testfiles.UserGit(t, c.root, "cat-file", "-p", ":c.bin"); !strings.HasPrefix(idx, "version https://git-lfs") {
		t.Errorf("the index's c.bin is %q, want a pointer", idx)
	}
	testfiles.UserGit(t, c.root, "commit", "-q", "-m", "landed")
	if fsck := testfiles.UserGit(t, c.root, "lfs", "fsck"); !strings.Contains(fsck, "OK") {
		t.Errorf("git lfs fsck: %s", fsck)
	}
}

// An LFS object missing from the user's storage (never fetched: the
// user's big.bin is its pointer, as after a clone with
// GIT_LFS_SKIP_SMUDGE=1, the file its pointer) is a clear error at the worktree's checkout,
// as in git's own checkout, never a download: the repository's
// .lfsconfig names a server (a loopback one the test runs), which no
// request reaches.
func TestLFSMissingObjectIsAnErrorNotADownload(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer srv.Close()
	big := strings.Repeat("0123456789abcdef", 1<<16)
	c := newLFSCase(t, func(root string) {
		write(t, root, map[string]string{".lfsconfig": "[lfs]\n\turl = " + srv.URL + "/lfs\n"})
		testfiles.UserGit(t, root, "add", ".lfsconfig")
		testfiles.UserGit(t, root, "commit", "-q", "-m", "server")
		write(t, root, map[string]string{"big.bin": testfiles.UserGit(t, root, "cat-file", "-p", "HEAD:big.bin") + "\n"})
		must(t, os.Remove(lfsObject(root, big)))
		past := time.Now().Add(-time.Hour)
		must(t, os.Chtimes(filepath.Join(root, "big.bin"), past, past))
		testfiles.UserGit(t, root, "add", "big.bin") // the same blob: the index takes the pointer's size and time
		if st := testfiles.UserGit(t, root, "status", "--porcelain"); st != "" {
			t.Fatalf("git status: %s", st)
		}
	})
	if got := read(t, c.root, "big.bin"); !strings.HasPrefix(got, "version https://git-lfs") {
		t.Fatalf("the user's big.bin is %.40q…, want its pointer", got)
	}
	r, snap := openSnap(t, c.root)
	_, err := r.NewWorktree(t.Context(), snap, "w")
	if err == nil || !strings.Contains(err.Error(), "big.bin") || !strings.Contains(err.Error(), "Error downloading object") {
		t.Fatalf("new worktree: %v, want git lfs's error naming big.bin", err)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the LFS server was asked %d times", n)
	}
	if _, err := os.Stat(lfsObject(c.root, big)); err == nil {
		t.Error("big.bin's object came back")
	}
	c.checkConfined(t)
}
