package workspace

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// inodeOf is the inode number of path (not followed).
func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Lstat(path)
	must(t, err)
	return fi.Sys().(*syscall.Stat_t).Ino
}

// nextLower makes, in a new Repo on root (as the next run does), the
// lower tree of the workspace as it is now, through a worktree name it
// returns, and that lower's directory.
func nextLower(t *testing.T, root, name string) (*Repo, *Worktree, string) {
	t.Helper()
	r := openOverlay(t, root)
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	w, err := r.NewWorktree(t.Context(), snap, name)
	must(t, err)
	t.Cleanup(func() { _ = w.Remove(context.Background()) })
	return r, w, lowerOf(t, r, snap).dir()
}

// TestNextLowerLinksTheFilesItShares: the lower tree of a new snapshot
// tree links, from the cached lower used last, every file the two hold
// alike (same inode), and writes the ones that differ; its worker sees
// the new tree, and git in it sees nothing changed. A worker writing
// through every shared file (append, chmod, touch, a hard link of its
// own) changes neither lower: each keeps its contents and modes.
func TestNextLowerLinksTheFilesItShares(t *testing.T) {
	files := map[string]string{"a.txt": "a\n", "d/b.txt": "b\n", "d/e/c.txt": "c\n"}
	r, snap, root := overlayRepo(t, files)
	first := lowerOf(t, r, snap).dir()
	write(t, root, map[string]string{"a.txt": "changed\n"})

	_, w, next := nextLower(t, root, "next")
	if next == first {
		t.Fatal("the changed workspace got the old lower")
	}
	for _, p := range []string{"d/b.txt", "d/e/c.txt"} {
		if inodeOf(t, filepath.Join(next, p)) != inodeOf(t, filepath.Join(first, p)) {
			t.Errorf("%s was written again, not linked", p)
		}
	}
	if inodeOf(t, filepath.Join(next, "a.txt")) == inodeOf(t, filepath.Join(first, "a.txt")) {
		t.Error("a.txt, which differs, was linked")
	}
	if got := inWorktree(t, w, "cat a.txt d/b.txt d/e/c.txt; git status --porcelain"); got != "changed\nb\nc\n" {
		t.Fatalf("the next run's worker sees %q", got)
	}
	inWorktree(t, w, `echo evil >> d/b.txt; chmod 755 d/e/c.txt; touch -d 2001-01-01 d/e/c.txt; ln d/b.txt hard; echo more >> hard`)
	want := map[string]string{"a.txt": "a\n", "d/b.txt": "b\n", "d/e/c.txt": "c\n"}
	if got := readTree(t, first); !maps.Equal(got, want) {
		t.Errorf("the first lower holds %v", got)
	}
	want["a.txt"] = "changed\n"
	if got := readTree(t, next); !maps.Equal(got, want) {
		t.Errorf("the next lower holds %v", got)
	}
}

// TestOlderLowerStillCapturesRight: a lower linked from keeps serving
// its worktrees right, though the links changed its files' change
// times: a worker on it that edits one file and adds another has those
// two captured, nothing else.
func TestOlderLowerStillCapturesRight(t *testing.T) {
	files := map[string]string{"a.txt": "a\n", "d/b.txt": "b\n", "d/c.txt": "c\n"}
	r, snap, root := overlayRepo(t, files)
	old, err := r.NewWorktree(t.Context(), snap, "old")
	must(t, err)
	defer old.Remove(context.Background())
	write(t, root, map[string]string{"a.txt": "changed\n"})
	nextLower(t, root, "next") // links d/b.txt and d/c.txt: their change times move

	inWorktree(t, old, "echo edit >> d/b.txt; echo new > d/new.txt")
	cs, err := old.CaptureTree(t.Context())
	must(t, err)
	if got := changedPaths(cs); !slices.Equal(got, []string{"d/b.txt", "d/new.txt"}) {
		t.Fatalf("the older lower's worker captured %v", got)
	}
}

// TestLowerLinksOnlyWhatItsIndexVouchesFor: a file of the older lower
// that is not what its index says (here rewritten behind troupe's back,
// another size) is written anew, never linked; and a lower not marked
// as holding its blobs' bytes is never linked from.
func TestLowerLinksOnlyWhatItsIndexVouchesFor(t *testing.T) {
	files := map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"}
	r, snap, root := overlayRepo(t, files)
	first := lowerOf(t, r, snap).dir()
	must(t, os.Chmod(filepath.Join(first, "b.txt"), 0o644))
	must(t, os.WriteFile(filepath.Join(first, "b.txt"), []byte("tampered\n"), 0o644))
	write(t, root, map[string]string{"a.txt": "changed\n"})

	_, w, next := nextLower(t, root, "next")
	if inodeOf(t, filepath.Join(next, "b.txt")) == inodeOf(t, filepath.Join(first, "b.txt")) {
		t.Error("b.txt, unlike its index, was linked")
	}
	if inodeOf(t, filepath.Join(next, "c.txt")) != inodeOf(t, filepath.Join(first, "c.txt")) {
		t.Error("c.txt was not linked")
	}
	if got := read(t, w.Root(), "b.txt"); got != "b\n" {
		t.Fatalf("the worker reads b.txt as %q", got)
	}

	must(t, os.Remove(filepath.Join(filepath.Dir(next), lowerRawMark)))
	write(t, root, map[string]string{"a.txt": "again\n"})
	for _, name := range cachedLowers(t, r) {
		if filepath.Join(r.lowersDir(), name, "tree") != next {
			must(t, removeAtomically(filepath.Join(r.lowersDir(), name), r.home.tmpDir()))
		}
	}
	_, _, third := nextLower(t, root, "third")
	if inodeOf(t, filepath.Join(third, "c.txt")) == inodeOf(t, filepath.Join(next, "c.txt")) {
		t.Error("a lower not marked raw was linked from")
	}
}

// readTree reads every regular file below dir with its contents.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	must(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 != 0 {
			t.Errorf("%s is %v", rel, fi.Mode())
		}
		data, err := os.ReadFile(p)
		got[filepath.ToSlash(rel)] = string(data)
		return err
	}))
	return got
}

// TestOverlayWorktreesShareTheLowersManifest: overlay worktrees of one
// lower read its index once: their manifests share one tree of
// directories, and each still captures only what its own agent did.
func TestOverlayWorktreesShareTheLowersManifest(t *testing.T) {
	r, snap, _ := overlayRepo(t, map[string]string{"a.txt": "a\n", "d/b.txt": "b\n"})
	var ws []*Worktree
	for _, name := range []string{"one", "two"} {
		w, err := r.NewWorktree(t.Context(), snap, name)
		must(t, err)
		defer w.Remove(context.Background())
		if w.hand == nil {
			t.Fatalf("%s has no manifest: %v", name, w.handErr)
		}
		ws = append(ws, w)
	}
	if ws[0].hand.root != ws[1].hand.root {
		t.Error("each worktree read the lower's index itself")
	}
	inWorktree(t, ws[0], "echo one >> a.txt")
	inWorktree(t, ws[1], "echo two >> d/b.txt; echo new > d/c.txt")
	for i, want := range [][]string{{"a.txt"}, {"d/b.txt", "d/c.txt"}} {
		cs, err := ws[i].CaptureTree(t.Context())
		must(t, err)
		if got := changedPaths(cs); !slices.Equal(got, want) {
			t.Errorf("worker %d captured %v, want %v", i, got, want)
		}
	}
}
