package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReusedWorktreeHoldsTheNewSnapshot(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n", ".gitignore": "*.log\n"})
	r, err := Open(t.Context(), root, Options{KeepIdle: 1})
	must(t, err)
	snap1, err := r.Snapshot(t.Context())
	must(t, err)
	w, err := r.NewWorktree(t.Context(), snap1, "w1")
	must(t, err)
	dir := w.Dir()
	write(t, w.Root(), map[string]string{"a.txt": "agent 1\n", "left.txt": "x\n", "build.log": "ignored\n"})
	cs, err := w.Capture(t.Context())
	must(t, err)
	if len(cs.Files) != 2 {
		t.Fatalf("first changeset %+v", cs.Files)
	}
	must(t, w.Remove(t.Context()))
	write(t, root, map[string]string{"b.txt": "user's new file\n"})
	snap2, err := r.Snapshot(t.Context())
	must(t, err)
	w2, err := r.NewWorktree(t.Context(), snap2, "w2")
	must(t, err)
	if w2.Dir() != dir {
		t.Errorf("not reused: %s, kept %s", w2.Dir(), dir)
	}
	for p, want := range map[string]string{"a.txt": "a\n", "b.txt": "user's new file\n", "left.txt": "<absent>", "build.log": "<absent>"} {
		if got := read(t, w2.Root(), p); got != want {
			t.Errorf("reused worktree %s = %q, want %q", p, got, want)
		}
	}
	cs, err = w2.Capture(t.Context())
	must(t, err)
	if !cs.Empty() {
		t.Errorf("reused worktree starts with changes: %+v", cs.Files)
	}
	must(t, w2.Remove(t.Context()))
	waitIdle(t, r)                                                   // an overlay's git directory is made anew while it is prepared
	if list := worktreeList(t, r); !strings.Contains(list, w2.dir) { // its path; an overlay's mount point
		t.Errorf("idle worktree not kept:\n%s", list)
	}
	must(t, r.Close(t.Context()))
	if list := worktreeList(t, r); strings.Count(list, "\n") != 0 {
		t.Errorf("worktrees left after Close:\n%s", list)
	}
}

// A kept worktree moved between snapshots that differ in every way a
// tree can (added, deleted, modes, symlinks, a file giving way to a
// directory and back) holds the new snapshot exactly, with an index git
// agrees with, and none of its last agent's files.
func TestReusedWorktreeSwitchesEveryKindOfChange(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n", "gone.txt": "g\n", "run.sh": "echo\n", "x": "file x\n",
		"d/y.txt": "y\n", ".gitignore": "*.log\n"})
	r, err := Open(t.Context(), root, Options{KeepIdle: 1})
	must(t, err)
	defer r.Close(t.Context())
	snap1, err := r.Snapshot(t.Context())
	must(t, err)
	w, err := r.NewWorktree(t.Context(), snap1, "w1")
	must(t, err)
	write(t, w.Root(), map[string]string{"a.txt": "agent\n", "new/agent.txt": "n\n", "build.log": "ignored\n"})
	_, err = w.Capture(t.Context())
	must(t, err)
	write(t, w.Root(), map[string]string{"late.log": "after the capture\n"})
	must(t, w.Remove(t.Context()))

	must(t, os.Remove(filepath.Join(root, "gone.txt")))
	must(t, os.Remove(filepath.Join(root, "x")))
	must(t, os.RemoveAll(filepath.Join(root, "d")))
	write(t, root, map[string]string{"a.txt": "user\n", "x/inner.txt": "now a directory\n", "d": "now a file\n", "added.txt": "+\n"})
	must(t, os.Chmod(filepath.Join(root, "run.sh"), 0o755))
	must(t, os.Symlink("a.txt", filepath.Join(root, "link")))
	for round, snapFn := range []func() Snapshot{
		func() Snapshot { s, err := r.Snapshot(t.Context()); must(t, err); return s },
		func() Snapshot { return snap1 }, // and back
	} {
		snap := snapFn()
		w, err := r.NewWorktree(t.Context(), snap, "w2")
		must(t, err)
		if status := sh(t, w.Dir(), "status", "--porcelain", "--ignored", "-uall"); status != "" {
			t.Errorf("round %d: worktree differs from its snapshot:\n%s", round, status)
		}
		if head := sh(t, w.Dir(), "rev-parse", "HEAD"); head != snap.Commit {
			t.Errorf("round %d: HEAD %s, want %s", round, head, snap.Commit)
		}
		if tree := sh(t, w.Dir(), "write-tree"); tree != snap.Tree {
			t.Errorf("round %d: index holds %s, want %s", round, tree, snap.Tree)
		}
		files := strings.Fields(sh(t, w.Dir(), "ls-files"))
		want := strings.Fields(sh(t, root, "ls-tree", "-r", "--name-only", snap.Tree))
		if !slices.Equal(files, want) {
			t.Errorf("round %d: files %v, want %v", round, files, want)
		}
		cs, err := w.Capture(t.Context())
		must(t, err)
		if !cs.Empty() {
			t.Errorf("round %d: starts with changes %+v", round, cs.Files)
		}
		must(t, w.Remove(t.Context()))
	}
}

// A worktree removed twice is kept once: two agents never share it.
func TestWorktreeRemovedTwiceIsKeptOnce(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n"})
	r, err := Open(t.Context(), root, Options{KeepIdle: 4})
	must(t, err)
	defer r.Close(t.Context())
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	w, err := r.NewWorktree(t.Context(), snap, "w1")
	must(t, err)
	must(t, w.Remove(t.Context()))
	must(t, w.Remove(t.Context()))
	a, err := r.NewWorktree(t.Context(), snap, "a")
	must(t, err)
	b, err := r.NewWorktree(t.Context(), snap, "b")
	must(t, err)
	if a.Dir() == b.Dir() {
		t.Errorf("two agents got the same worktree %s", a.Dir())
	}
	must(t, a.Remove(t.Context()))
	must(t, b.Remove(t.Context()))
}
