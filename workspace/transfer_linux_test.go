package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Two nodes sharing a data directory share its store: a bundle is not
// unbundled while the other adds a worktree, whose HEAD is a placeholder
// meanwhile that git's check of the bundle against every ref takes for a
// bad object. The test holds the worktree lock with such a placeholder
// in place until the unbundling waits for the lock (it shows in
// /proc/locks), and the unbundling then succeeds.
func TestUnbundleWaitsForAWorktreeBeingAdded(t *testing.T) {
	requester := newRepo(t, map[string]string{"a.go": "package a\n", ".gitignore": ".troupe/\n"})
	write(t, requester, map[string]string{"a.go": "package a // uncommitted edit\n"})
	snap, err := open(t, requester).Snapshot(t.Context())
	must(t, err)
	full, err := open(t, requester).Bundle(t.Context(), snap, false)
	must(t, err)
	defer full.Remove()
	data := filepath.Join(t.TempDir(), "data")
	adding, err := OpenStore(t.Context(), data, "", 0)
	must(t, err)
	unbundling, err := OpenStore(t.Context(), data, "", 0)
	must(t, err)

	unlock, err := adding.lock("worktree")
	must(t, err)
	record := filepath.Join(adding.home.dir, "worktrees", "being-added")
	must(t, os.MkdirAll(record, 0o755))
	for name, text := range map[string]string{"HEAD": strings.Repeat("0", 40), "commondir": "../..", "gitdir": filepath.Join(data, "being-added", ".git")} {
		must(t, os.WriteFile(filepath.Join(record, name), []byte(text+"\n"), 0o644))
	}
	done := make(chan error, 1)
	go func() { done <- unbundling.Unbundle(context.WithoutCancel(t.Context()), full) }()
	lockFile := filepath.Join(adding.home.dir, "troupe-worktree.lock")
	for waiting := false; !waiting; {
		select {
		case err := <-done:
			unlock()
			t.Fatalf("unbundled while a worktree was being added: %v", err)
		case <-time.After(10 * time.Millisecond):
			waiting = lockWaited(t, lockFile)
		}
	}
	must(t, os.RemoveAll(record))
	unlock()
	must(t, <-done)
	if !unbundling.Has(t.Context(), snap.Commit) {
		t.Error("the store lacks the unbundled snapshot")
	}
}

// lockWaited reports whether a process waits for the flock of path
// (a "->" line of /proc/locks names the file's inode).
func lockWaited(t *testing.T, path string) bool {
	t.Helper()
	fi, err := os.Stat(path)
	must(t, err)
	locks, err := os.ReadFile("/proc/locks")
	must(t, err)
	ino := ":" + strconv.FormatUint(fi.Sys().(*syscall.Stat_t).Ino, 10) + " "
	for _, line := range strings.Split(string(locks), "\n") {
		if strings.Contains(line, "->") && strings.Contains(line, ino) {
			return true
		}
	}
	return false
}

// Nodes sharing a data directory open its store at once, the first time
// too: every one of them gets it (two git inits of one repository
// collide on its config lock unless they take turns).
func TestStoreOpenedAtOnceByManyProcesses(t *testing.T) {
	borrow := newRepo(t, map[string]string{"a.go": "package a\n"})
	for round := 0; round < 10; round++ {
		data := filepath.Join(t.TempDir(), "data")
		errs := make(chan error, 8)
		for i := 0; i < cap(errs); i++ {
			go func() {
				_, err := OpenStore(context.WithoutCancel(t.Context()), data, borrow, 0)
				errs <- err
			}()
		}
		for i := 0; i < cap(errs); i++ {
			must(t, <-errs)
		}
	}
}
