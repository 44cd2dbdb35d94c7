package workspace

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// outside makes a directory outside the workspace holding files, and
// returns it and a check that it holds exactly them still.
func outside(t *testing.T, files map[string]string) (string, func(t *testing.T, when string)) {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, files)
	return dir, func(t *testing.T, when string) {
		t.Helper()
		var got []string
		must(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				got = append(got, filepath.ToSlash(rel))
			}
			return err
		}))
		want := slices.Sorted(maps.Keys(files))
		if !slices.Equal(got, want) {
			t.Errorf("%s: outside the workspace: %v, want %v", when, got, want)
		}
		for p, c := range files {
			if got := read(t, dir, p); got != c {
				t.Errorf("%s: outside the workspace %s = %q, want %q", when, p, got, c)
			}
		}
	}
}

// linkTo makes link a symlink to target, replacing what is there.
func linkTo(t *testing.T, link, target string) {
	t.Helper()
	must(t, os.RemoveAll(link))
	must(t, os.Symlink(target, link))
}

// Attack 4 of issue 28: while a background worker edits, deletes and
// adds files in d/, the root swaps d/ for a symlink to a directory
// outside. The merge-back writes and deletes nothing there: the outcome
// is a conflict naming the rule, the patch is kept, and the next run on
// the same workspace (a Repo opened afresh) meets the same rule.
func TestMergeNeverFollowsASymlinkedDirectory(t *testing.T) {
	root := newRepo(t, map[string]string{"d/x": "x\n", "d/y": "y\n", "d/e/z": "z\n", "keep.txt": "k\n", ".gitignore": ".troupe/\n"})
	target, untouched := outside(t, map[string]string{"x": "outside x\n", "y": "outside y\n", "e/z": "outside z\n"})
	for run := range 2 {
		r, snap := openSnap(t, root)
		w, err := r.NewWorktree(t.Context(), snap, "worker"+strconvItoa(run))
		must(t, err)
		if run == 1 {
			// The next run: its snapshot holds d as the symlink, which
			// its worker's tools and commands do not write through; its
			// other changes land, and still nothing outside changes.
			write(t, w.Dir(), map[string]string{"d2/new": "new\n"})
			cs, err := w.Capture(t.Context())
			must(t, err)
			out, err := r.Apply(t.Context(), snap, cs, ModeApply, "run1", "worker")
			must(t, err)
			untouched(t, "the next run")
			if out.Status != messages.ChangeStatusApplied || read(t, root, "d2/new") != "new\n" {
				t.Errorf("the next run's changes: %+v", out)
			}
			must(t, w.Remove(t.Context()))
			continue
		}
		write(t, w.Dir(), map[string]string{"d/x": "worker's x\n", "d/new": "new\n", "d/e/z": "worker's z\n", "keep.txt": "k2\n"})
		must(t, os.Remove(filepath.Join(w.Dir(), "d", "y")))
		linkTo(t, filepath.Join(root, "d"), target) // the root's swap, while the worker works
		cs, err := w.Capture(t.Context())
		must(t, err)
		out, err := r.Apply(t.Context(), snap, cs, ModeApply, "run0", "worker")
		must(t, err)
		untouched(t, "run "+strconvItoa(run))
		if out.Status != messages.ChangeStatusConflict || !strings.Contains(out.Reason, "d is a symbolic link") {
			t.Fatalf("run %d: outcome %+v, want a conflict naming d as a symbolic link", run, out)
		}
		for _, p := range []string{"d/x", "d/y", "d/new", "d/e/z"} {
			if !slices.Contains(out.Conflicts, p) {
				t.Errorf("run %d: %s not among the conflicts %v", run, p, out.Conflicts)
			}
		}
		if got := read(t, root, "keep.txt"); got != "k\n" {
			t.Errorf("run %d: keep.txt = %q: a conflict writes nothing", run, got)
		}
		if _, err := os.Stat(out.Patch); err != nil {
			t.Errorf("run %d: the patch was not kept: %v", run, err)
		}
		if fi, err := os.Lstat(filepath.Join(root, "d")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("run %d: d is no longer the user's symlink: %v", run, err)
		}
		must(t, w.Remove(t.Context()))
	}
}

// A file of the workspace that became a symlink to a file outside is
// never written through: the merge sees a symlink where the snapshot had
// a file (a conflict), and a change applied over such a path replaces
// the link itself.
func TestMergeNeverWritesThroughASymlinkedFile(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", ".gitignore": ".troupe/\n"})
	target, untouched := outside(t, map[string]string{"secret": "secret\n"})
	r, snap := openSnap(t, root)
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	write(t, w.Dir(), map[string]string{"a.txt": "worker's a\n"})
	cs, err := w.Capture(t.Context())
	must(t, err)
	linkTo(t, filepath.Join(root, "a.txt"), filepath.Join(target, "secret"))
	out, err := r.Apply(t.Context(), snap, cs, ModeApply, "run", "w")
	must(t, err)
	if out.Status != messages.ChangeStatusConflict {
		t.Errorf("outcome %+v, want a conflict", out)
	}
	untouched(t, "merged")

	top, err := openBeneath(root, ".", false)
	must(t, err)
	defer top.close()
	must(t, writeChange(top, change{path: "a.txt", to: version{mode: "100644", data: []byte("replaced\n")}}))
	if fi, err := os.Lstat(filepath.Join(root, "a.txt")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("a.txt is not a file of its own now: %v", err)
	}
	untouched(t, "replaced")
}

// A symlink swapped in after the merge decided (while it writes) stops
// the write at the link: no file is created, replaced or removed
// through it, and the error says which rule stopped it.
func TestWriteChangeStopsAtASymlinkedParent(t *testing.T) {
	root := newRepo(t, map[string]string{"d/x": "x\n", "d/e/y": "y\n"})
	target, untouched := outside(t, map[string]string{"x": "outside x\n", "e/y": "outside y\n"})
	linkTo(t, filepath.Join(root, "d"), target)
	top, err := openBeneath(root, ".", false)
	must(t, err)
	defer top.close()
	for _, c := range []change{
		{path: "d/x", to: version{mode: "100644", data: []byte("written\n")}},
		{path: "d/new", to: version{mode: "100755", data: []byte("written\n")}},
		{path: "d/link", to: version{mode: "120000", data: []byte("/etc/passwd")}},
		{path: "d/e/y", to: version{mode: "100644", data: []byte("written\n")}},
		{path: "d/x"}, // a deletion
		{path: "d/e/y"},
	} {
		err := writeChange(top, c)
		if !errors.Is(err, errSymlinkParent) || linkReason(err) != "d is a symbolic link in the workspace: troupe never writes or deletes through one" {
			t.Errorf("%s: %v (rule %q)", c.path, err, linkReason(err))
		}
	}
	untouched(t, "written")
}

// Kept patches go through no symlink an agent put in the data
// directory: a symlinked directory on the way is an error and nothing is
// written; a symlink at the patch's own path is replaced, not followed.
func TestKeptPatchNeverFollowsASymlink(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, ".troupe")
	must(t, os.MkdirAll(data, 0o755))
	target, untouched := outside(t, map[string]string{"authorized_keys": "ssh-ed25519 AAAA user\n"})

	linkTo(t, filepath.Join(data, "runs"), target)
	if _, err := KeepPatch(root, data, "r1", "a1", []byte("patch\n")); !errors.Is(err, errSymlinkParent) {
		t.Errorf("through a symlinked runs/: %v", err)
	}
	untouched(t, "kept through a symlinked directory")

	must(t, os.Remove(filepath.Join(data, "runs")))
	must(t, os.MkdirAll(filepath.Join(data, "runs", "r2", "changes"), 0o755))
	linkTo(t, filepath.Join(data, "runs", "r2", "changes", "a2.patch"), filepath.Join(target, "authorized_keys"))
	path, err := KeepPatch(root, data, "r2", "a2", []byte("patch\n"))
	must(t, err)
	if got := read(t, filepath.Dir(path), filepath.Base(path)); got != "patch\n" {
		t.Errorf("kept patch %q", got)
	}
	untouched(t, "kept over a symlink")
}

// A worktree whose path an agent swapped for a symlink to a directory
// outside (after renaming the worktree away): its removal removes the
// link, never what it names; kept for reuse, it is prepared where it
// really is and never handed out again through the link; and prune
// deletes a dead process's leftover link, not its target, and nothing
// at all through a symlinked worktrees directory.
func TestWorktreeCleanupNeverFollowsASymlink(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n", ".gitignore": ".troupe/\n"})
	target, untouched := outside(t, map[string]string{"id_rsa": "key\n", "notes": "n\n"})
	for _, keep := range []int{0, 1} {
		r, err := Open(t.Context(), root, Options{KeepIdle: keep})
		must(t, err)
		snap, err := r.Snapshot(t.Context())
		must(t, err)
		w, err := r.NewWorktree(t.Context(), snap, "w")
		must(t, err)
		write(t, w.Dir(), map[string]string{"b.txt": "agent\n"})
		must(t, os.Rename(w.Dir(), w.Dir()+".moved"))
		must(t, os.Symlink(target, w.Dir()))
		cs, err := w.Capture(t.Context())
		must(t, err)
		if len(cs.Files) != 1 || cs.Files[0].Path != "b.txt" {
			t.Errorf("keep %d: captured %+v, want the worktree's own b.txt", keep, cs.Files)
		}
		must(t, w.Remove(t.Context()))
		if w.ov != nil && keep == 1 {
			// An overlay worktree is mounted again at its path, opened
			// without following a symlink: refused, it is not kept.
			<-w.ready
			if w.err == nil || !strings.Contains(w.err.Error(), "symbolic links") {
				t.Errorf("remounted over the swapped path: %v", w.err)
			}
		} else {
			waitIdle(t, r)
		}
		untouched(t, "removed")
		w2, err := r.NewWorktree(t.Context(), snap, "w2")
		must(t, err)
		if fi, err := os.Lstat(w2.Dir()); err != nil || !fi.IsDir() || w2.Dir() == w.Dir() {
			t.Errorf("keep %d: handed out %s (%v), the swapped path was %s", keep, w2.Dir(), err, w.Dir())
		}
		must(t, w2.Remove(t.Context()))
		must(t, r.Close(t.Context()))
		untouched(t, "closed")
		must(t, os.RemoveAll(w.Dir()+".moved"))
	}

	r := open(t, root)
	deadPid := deadProcess(t)
	wt := r.worktreesDir()
	must(t, os.MkdirAll(wt, 0o755))
	linkTo(t, filepath.Join(wt, deadPid+"-left"), target)
	must(t, r.Prune(t.Context()))
	untouched(t, "pruned")
	if _, err := os.Lstat(filepath.Join(wt, deadPid+"-left")); !os.IsNotExist(err) {
		t.Errorf("the leftover link is still there: %v", err)
	}
	victims, untouchedVictims := outside(t, map[string]string{deadPid + "-victim/f": "f\n"})
	must(t, os.RemoveAll(wt))
	linkTo(t, wt, victims)
	if err := r.Prune(t.Context()); !errors.Is(err, errSymlinkParent) {
		t.Errorf("prune through a symlinked worktrees directory: %v", err)
	}
	untouchedVictims(t, "pruned through a symlinked worktrees directory")
}

// A kept worktree's preparation writes its tracked files through its own
// directory: a tracked directory the agent replaced with a symlink to
// one outside stops it (it is then reset by git, which removes the link)
// and nothing outside is written.
func TestWorktreeSwitchNeverFollowsASymlink(t *testing.T) {
	root := newRepo(t, map[string]string{"d/x": "1\n", ".gitignore": ".troupe/\n"})
	r, snap1 := openSnap(t, root)
	write(t, root, map[string]string{"d/x": "2\n"})
	snap2, err := r.Snapshot(t.Context())
	must(t, err)
	w, err := r.NewWorktree(t.Context(), snap1, "w")
	must(t, err)
	target, untouched := outside(t, map[string]string{"x": "outside\n"})
	linkTo(t, filepath.Join(w.Dir(), "d"), target)
	if err := w.switchFiles(t.Context(), snap1.Tree, snap2.Tree); !errors.Is(err, errSymlinkParent) {
		t.Errorf("switch through a symlinked directory: %v", err)
	}
	must(t, w.reset(t.Context(), snap2))
	untouched(t, "switched")
	if got := read(t, w.Dir(), "d/x"); got != "2\n" {
		t.Errorf("after the reset d/x = %q", got)
	}
	must(t, w.Remove(context.Background()))
}

// deadProcess is the ID of a process that ran and ended.
func deadProcess(t testing.TB) string {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	must(t, err)
	_, err = p.Wait()
	must(t, err)
	return strconvItoa(p.Pid)
}
