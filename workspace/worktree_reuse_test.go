package workspace

import (
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
	if list := sh(t, root, "worktree", "list"); !strings.Contains(list, dir) {
		t.Errorf("idle worktree not kept:\n%s", list)
	}
	must(t, r.Close(t.Context()))
	if list := sh(t, root, "worktree", "list"); strings.Count(list, "\n") != 0 {
		t.Errorf("worktrees left after Close:\n%s", list)
	}
}
