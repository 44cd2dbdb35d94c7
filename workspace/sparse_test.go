package workspace

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// A sparse checkout: the snapshot holds the files outside the cone as
// committed, the worktree is full, and a worker's edits inside and
// outside the cone are never lost nor reported applied with a file
// missing: the changeset conflicts on the file outside the cone, with a
// reason saying so, and its patch (the in-cone edit too) is kept and
// applies to the snapshot.
func TestSparseCheckoutLosesNothing(t *testing.T) {
	root := newRepo(t, map[string]string{"a/x.txt": "x\n", "b/y.txt": "y\n", "top.txt": "t\n"})
	sh(t, root, "sparse-checkout", "set", "a")
	if read(t, root, "b/y.txt") != "<absent>" {
		t.Fatal("the cone did not apply")
	}
	r, snap := openSnap(t, root)
	if got := sh(t, root, "--git-dir="+r.home.dir, "show", snap.Tree+":b/y.txt"); got != "y" {
		t.Fatalf("the snapshot's b/y.txt is %q", got)
	}
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	if read(t, w.Dir(), "b/y.txt") != "y\n" {
		t.Fatalf("the worktree is not full: b/y.txt %q", read(t, w.Dir(), "b/y.txt"))
	}
	write(t, w.Dir(), map[string]string{"a/x.txt": "x2\n", "b/y.txt": "y2\n"})
	cs, err := w.Capture(t.Context())
	must(t, err)
	var files []string
	for _, f := range cs.Files {
		files = append(files, f.Path)
	}
	if !slices.Equal(files, []string{"a/x.txt", "b/y.txt"}) {
		t.Fatalf("the capture holds %v", files)
	}
	out, err := r.Apply(t.Context(), snap, cs, ModeApply, "run", "w")
	must(t, err)
	if out.Status != "conflict" || !slices.Equal(out.Conflicts, []string{"b/y.txt"}) || !strings.Contains(out.Reason, "sparse-checkout cone") {
		t.Fatalf("outcome %+v", out)
	}
	if read(t, root, "a/x.txt") != "x\n" || read(t, root, "b/y.txt") != "<absent>" {
		t.Errorf("a conflicting changeset wrote files: a/x.txt %q b/y.txt %q", read(t, root, "a/x.txt"), read(t, root, "b/y.txt"))
	}
	check := exec.Command("git", "apply", "--cached", "--check", out.Patch)
	check.Dir = root
	check.Env = append(check.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if b, err := check.CombinedOutput(); err != nil {
		t.Errorf("the kept patch does not apply to the snapshot: %v %s", err, b)
	}
	if patch := read(t, root, strings.TrimPrefix(out.Patch, root+"/")); !strings.Contains(patch, "+x2") || !strings.Contains(patch, "+y2") {
		t.Errorf("the kept patch lacks an edit:\n%s", patch)
	}

	// A file new outside the cone lands (git status shows it) and one
	// inside merges as usual.
	w2, err := r.NewWorktree(t.Context(), snap, "w2")
	must(t, err)
	write(t, w2.Dir(), map[string]string{"a/x.txt": "x3\n", "b/new.txt": "n\n"})
	cs2, err := w2.Capture(t.Context())
	must(t, err)
	out2, err := r.Apply(t.Context(), snap, cs2, ModeApply, "run", "w2")
	must(t, err)
	if out2.Status != "applied" || read(t, root, "a/x.txt") != "x3\n" || read(t, root, "b/new.txt") != "n\n" {
		t.Errorf("outcome %+v; a/x.txt %q b/new.txt %q", out2, read(t, root, "a/x.txt"), read(t, root, "b/new.txt"))
	}
	if st := sh(t, root, "status", "--porcelain", "--untracked-files=all"); !strings.Contains(st, "b/new.txt") || !strings.Contains(st, "a/x.txt") {
		t.Errorf("git status does not show what landed:\n%s", st)
	}
}
