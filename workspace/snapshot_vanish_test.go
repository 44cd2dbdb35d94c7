package workspace

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A file that vanishes while the workspace is snapshot (a sibling
// agent's atomic write renaming its temporary file away, a build, an
// editor) makes git add die ("fatal: unable to stat '.troupe-….tmp': No
// such file or directory", exit status 128) though --ignore-errors is
// given. The snapshot is taken anyway, from what is there: it must not
// fail, or the agent about to get a worktree of it is never started and
// its work is lost. addHook makes git's first run end as git does when
// it meets such a file (a real process exiting with 128, after the file
// it had listed is removed), the race itself being timing-dependent.
func TestSnapshotSurvivesAFileThatVanishesDuringTheAdd(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	sh(t, dir, "init", "-q", "-b", "main")
	write(t, dir, map[string]string{"main.go": "package main\n", "util.go": "package main\n"})
	sh(t, dir, "add", "-A")
	sh(t, dir, "commit", "-q", "-m", "first")
	write(t, dir, map[string]string{"util.go": "package main // edited\n", ".troupe-0badf00d.tmp": "half written\n"})
	var attempts []int
	addHook = func(attempt int) error {
		attempts = append(attempts, attempt)
		if attempt > 1 {
			return nil
		}
		must(t, os.Remove(filepath.Join(dir, ".troupe-0badf00d.tmp"))) // renamed away by its writer
		return exec.Command("sh", "-c", `echo "fatal: unable to stat '.troupe-0badf00d.tmp': No such file or directory" >&2; exit 128`).Run()
	}
	t.Cleanup(func() { addHook = nil })
	r := open(t, dir)
	t.Cleanup(func() { _ = r.Close(t.Context()) })
	snap, err := r.Snapshot(t.Context())
	if err != nil {
		t.Fatalf("the snapshot failed on a file that vanished while git add ran (git ran %v times): %v", attempts, err)
	}
	if got := sh(t, dir, "show", snap.Commit+":util.go"); got != "package main // edited" {
		t.Errorf("the snapshot holds util.go %q, want the edit", got)
	}
	if files := sh(t, dir, "ls-tree", "-r", "--name-only", snap.Commit); strings.Contains(files, ".tmp") || !strings.Contains(files, "main.go") {
		t.Errorf("the snapshot holds:\n%s\nwant main.go and util.go, not the file that vanished", files)
	}
	if len(attempts) != 2 {
		t.Errorf("git add ran %d times, want 2 (again once after the file vanished)", len(attempts))
	}
}

// A git add that fails for another reason than dying is not run again:
// its error is the snapshot's.
func TestSnapshotDoesNotRetryAnAddThatFailsOtherwise(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	sh(t, dir, "init", "-q", "-b", "main")
	write(t, dir, map[string]string{"main.go": "package main\n"})
	var attempts int
	refused := errors.New("refused")
	addHook = func(int) error { attempts++; return refused }
	t.Cleanup(func() { addHook = nil })
	r := open(t, dir)
	t.Cleanup(func() { _ = r.Close(t.Context()) })
	if _, err := r.Snapshot(t.Context()); !errors.Is(err, refused) || attempts != 1 {
		t.Errorf("snapshot: %v after %d runs of git add, want the add's error after one", err, attempts)
	}
}
