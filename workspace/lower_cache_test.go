package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
)

// lowerOf is the lower tree the Repo r holds for snap.
func lowerOf(t *testing.T, r *Repo, snap Snapshot) *lowerTree {
	t.Helper()
	r.lowers.mu.Lock()
	defer r.lowers.mu.Unlock()
	l := r.lowers.m[snap.Tree]
	if l == nil {
		t.Fatalf("no lower tree of %s", snap.Tree)
	}
	return l
}

// cachedLowers are the names in the home's lowers directory.
func cachedLowers(t *testing.T, r *Repo) []string {
	t.Helper()
	es, err := os.ReadDir(r.lowersDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// lowerFiles reads every file below dir (regular files with their
// contents and whether they are executable), failing on anything else.
func lowerFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			t.Errorf("%s is %v", rel, fi.Mode())
			return nil
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Nlink != 1 {
			t.Errorf("%s has %d links", rel, st.Nlink)
		}
		data, err := os.ReadFile(p)
		if fi.Mode().Perm()&0o111 != 0 {
			rel += " (executable)"
		}
		got[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// openOverlay opens root again, as the next run does, with overlay
// worktrees.
func openOverlay(t *testing.T, root string) *Repo {
	t.Helper()
	r, err := Open(t.Context(), root, Options{Worktrees: WorktreesOverlay})
	must(t, err)
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

// TestCachedLowerServesTheNextRun: the lower tree one run checked out
// is the one the next run of any Repo on the same tree mounts: nothing
// is checked out again, and the cache holds one lower.
func TestCachedLowerServesTheNextRun(t *testing.T) {
	files := map[string]string{"a.txt": "a\n", "d/b.txt": "b\n"}
	r, snap, root := overlayRepo(t, files)
	first := lowerOf(t, r, snap)
	if first.cached == nil || first.w != nil {
		t.Fatalf("the lower tree of a repository without filters is not cached: %+v", first)
	}
	must(t, r.Close(t.Context()))

	next := openOverlay(t, root)
	snap2, err := next.Snapshot(t.Context())
	must(t, err)
	if snap2.Tree != snap.Tree {
		t.Fatalf("the workspace changed: %s, was %s", snap2.Tree, snap.Tree)
	}
	w, err := next.NewWorktree(t.Context(), snap2, "next")
	must(t, err)
	defer w.Remove(context.Background())
	if l := lowerOf(t, next, snap2); l.dir() != first.dir() {
		t.Fatalf("the next run checked out %s, not the cached %s", l.dir(), first.dir())
	}
	if got := cachedLowers(t, next); len(got) != 1 {
		t.Fatalf("the cache holds %v, want one lower", got)
	}
	if got := read(t, w.Root(), "d/b.txt"); got != "b\n" {
		t.Fatalf("the next run's worker reads %q", got)
	}
}

// TestWorkerCannotChangeTheCachedLower: whatever a worker does to files
// it shares with a cached lower tree (written through a hard link,
// chmod, append, truncate, touch, remove, a directory removed), through
// its commands and troupe's tools, the cached lower keeps the tree as
// checked out (same contents, modes, one link each) and the next run's
// worker sees it pristine.
func TestWorkerCannotChangeTheCachedLower(t *testing.T) {
	files := map[string]string{"link": "1\n", "mode.sh": "2\n", "append": "3\n", "trunc": "4\n", "touch": "5\n", "gone": "6\n", "d/deep": "7\n"}
	r, snap, root := overlayRepo(t, files)
	w, err := r.NewWorktree(t.Context(), snap, "attacker")
	must(t, err)
	lower := lowerOf(t, r, snap).dir()
	inWorktree(t, w, `ln link hard && echo evil >> hard; chmod 4777 mode.sh; echo evil >> append; : > trunc
touch -d 2001-01-01 touch; rm gone; rm -rf d; ln -s `+lower+`/link escape; echo evil >> escape || true`)
	write(t, w.Root(), map[string]string{"link": "tool\n", "new": "new\n"})
	if got := read(t, w.Root(), "hard"); got != "tool\n" {
		t.Fatalf("the worker's hard link reads %q", got)
	}
	must(t, w.Remove(t.Context()))
	must(t, r.Close(t.Context()))

	if got := lowerFiles(t, lower); !maps.Equal(got, files) {
		t.Fatalf("the cached lower holds %v, want %v", got, files)
	}
	next := openOverlay(t, root)
	snap2, err := next.Snapshot(t.Context())
	must(t, err)
	w2, err := next.NewWorktree(t.Context(), snap2, "next")
	must(t, err)
	defer w2.Remove(context.Background())
	if lowerOf(t, next, snap2).dir() != lower {
		t.Fatal("the next run did not use the cached lower")
	}
	if got := inWorktree(t, w2, "cat link append trunc gone d/deep; stat -c %a mode.sh; git status --porcelain"); got != "1\n3\n4\n6\n7\n644\n" {
		t.Fatalf("the next run's worker sees %q", got)
	}
}

// TestHalfMadeLowerIsNeverUsed: a checkout of a lower tree that fails
// half-way (a killed process's) leaves nothing in the cache, and the
// next worktree makes it whole.
func TestHalfMadeLowerIsNeverUsed(t *testing.T) {
	files := map[string]string{"a.txt": "a\n", "b.txt": "b\n"}
	root := newRepo(t, files)
	r := openOverlay(t, root)
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	r.checkout.fault = func() error { cancel(); return errors.New("killed mid-checkout") }
	if _, err := r.NewWorktree(ctx, snap, "half"); err == nil {
		r.checkout.fault = nil
		if _, err := r.worktreeKind(); err == nil && r.lowers.kind != WorktreesOverlay {
			t.Skip("overlay worktrees unavailable")
		}
		t.Fatal("a worktree was made on a lower whose checkout failed")
	}
	if got := cachedLowers(t, r); len(got) != 0 {
		t.Fatalf("a failed checkout left %v in the cache", got)
	}
	r.checkout.fault = nil
	w, err := r.NewWorktree(t.Context(), snap, "whole")
	if err != nil && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	must(t, err)
	defer w.Remove(context.Background())
	if got := lowerFiles(t, lowerOf(t, r, snap).dir()); !maps.Equal(got, files) {
		t.Fatalf("the lower holds %v", got)
	}
}

// TestTwoProcessesMakeOneLower: Repos of two runs making the lower of
// one tree at once both get a whole tree, and the cache keeps one.
func TestTwoProcessesMakeOneLower(t *testing.T) {
	files := map[string]string{"a.txt": "a\n", "d/b.txt": "b\n"}
	_, snap, root := overlayRepo(t, files)
	var wg sync.WaitGroup
	repos := []*Repo{openOverlay(t, root), openOverlay(t, root)}
	// The first run's lower is dropped from the cache: both make it anew.
	for _, name := range cachedLowers(t, repos[0]) {
		must(t, os.RemoveAll(filepath.Join(repos[0].lowersDir(), name)))
	}
	errs := make([]error, 2)
	for i, r := range repos {
		wg.Go(func() {
			w, err := r.NewWorktree(t.Context(), snap, fmt.Sprintf("w%d", i))
			if err == nil {
				if got := read(t, w.Root(), "d/b.txt"); got != "b\n" {
					t.Errorf("run %d reads %q", i, got)
				}
				err = w.Remove(context.Background())
			}
			errs[i] = err
		})
	}
	wg.Wait()
	must(t, errors.Join(errs...))
	if got := cachedLowers(t, repos[0]); len(got) != 1 {
		t.Fatalf("the cache holds %v, want one lower", got)
	}
}

// TestTrimSparesLowersInUse: making more lowers than the cache keeps
// removes the oldest idle ones, never one a live Repo holds.
func TestTrimSparesLowersInUse(t *testing.T) {
	r, snap, root := overlayRepo(t, map[string]string{"a.txt": "0\n"})
	held := lowerOf(t, r, snap).dir()
	for i := range maxCachedLowers + 2 {
		write(t, root, map[string]string{"a.txt": string(rune('a'+i)) + "\n"})
		other := openOverlay(t, root)
		s, err := other.Snapshot(t.Context())
		must(t, err)
		w, err := other.NewWorktree(t.Context(), s, "w")
		must(t, err)
		must(t, w.Remove(t.Context()))
		must(t, other.Close(t.Context()))
	}
	got := cachedLowers(t, r)
	if len(got) > maxCachedLowers+1 {
		t.Fatalf("the cache holds %d lowers, want at most %d", len(got), maxCachedLowers+1)
	}
	if !slices.Contains(got, filepath.Base(filepath.Dir(held))) {
		t.Fatalf("the lower a live Repo holds was trimmed: %v", got)
	}
	if got := lowerFiles(t, held); got["a.txt"] != "0\n" {
		t.Fatalf("the held lower holds %v", got)
	}
}
