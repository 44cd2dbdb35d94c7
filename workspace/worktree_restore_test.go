package workspace

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// kept opens root with one worktree kept for reuse and snapshots it.
func kept(t *testing.T, root string) (*Repo, Snapshot) {
	t.Helper()
	r, err := Open(t.Context(), root, Options{KeepIdle: 1})
	must(t, err)
	t.Cleanup(func() { _ = r.Close(t.Context()) })
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	return r, snap
}

// parkAndCheck removes w, waits for its preparation and checks how it
// went and that the worktree holds snap exactly (files, index, HEAD,
// nothing untracked or ignored left).
func parkAndCheck(t *testing.T, r *Repo, w *Worktree, snap Snapshot, how string) {
	t.Helper()
	must(t, w.Remove(t.Context()))
	waitIdle(t, r)
	if w.ov != nil {
		how = "remount" // an overlay worktree is made fresh (overlay_reuse.go)
	}
	if w.prepared != how {
		t.Errorf("prepared by %s, want %s", w.prepared, how)
	}
	if status := sh(t, w.Dir(), "status", "--porcelain", "--ignored", "-uall"); status != "" {
		t.Errorf("worktree differs from its snapshot:\n%s", status)
	}
	if head := sh(t, w.Dir(), "rev-parse", "HEAD"); head != snap.Commit {
		t.Errorf("HEAD %s, want %s", head, snap.Commit)
	}
	if tree := sh(t, w.Dir(), "write-tree"); tree != snap.Tree {
		t.Errorf("index holds %s, want %s", tree, snap.Tree)
	}
}

// A kept worktree is restored in Go after random edits of every kind,
// captured or not, and handed over again with a manifest; round after
// round it holds its snapshot exactly.
func TestRestoreUndoesEveryKindOfEdit(t *testing.T) {
	r, snap := kept(t, diffRepo(t))
	for seed := range uint64(12) {
		w, err := r.NewWorktree(t.Context(), snap, fmt.Sprintf("w%d", seed))
		must(t, err)
		if w.hand == nil {
			t.Fatalf("round %d: no manifest: %v", seed, w.handErr)
		}
		cs, err := w.Capture(t.Context())
		must(t, err)
		if !cs.Empty() || w.captured != "go" {
			t.Fatalf("round %d: starts with changes %+v (captured by %s)", seed, cs.Files, w.captured)
		}
		rng := rand.New(rand.NewPCG(seed, 11))
		edits := 2 + rng.IntN(8)
		for n := range edits {
			if seed%3 == 0 && n == edits/2 { // edits after the capture too
				_, err := w.Capture(t.Context())
				must(t, err)
			}
			randomEdit(t, rng, w.Dir(), n)
		}
		if seed%3 == 1 {
			_, err := w.Capture(t.Context())
			must(t, err)
		}
		parkAndCheck(t, r, w, snap, "restore")
	}
}

// A symlink the agent leaves pointing outside the worktree, in a new
// entry's place, a tracked file's or a tracked directory's, does not
// make the restore delete or write anything outside.
func TestRestoreStaysInsideTheWorktree(t *testing.T) {
	r, snap := kept(t, diffRepo(t))
	outside := t.TempDir()
	write(t, outside, map[string]string{"one": "outside 1\n", "keep": "outside keep\n", "x": "outside x\n"})
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	dir := w.Dir()
	must(t, os.RemoveAll(filepath.Join(dir, "z")))
	must(t, os.Symlink(outside, filepath.Join(dir, "z")))                            // tracked z/one, z/two
	must(t, os.Remove(filepath.Join(dir, "a.txt")))                                  // a tracked file
	must(t, os.Symlink(filepath.Join(outside, "keep"), filepath.Join(dir, "a.txt"))) // now a link out
	must(t, os.Symlink(outside, filepath.Join(dir, "evil")))                         // a new entry
	must(t, os.Symlink(outside, filepath.Join(dir, "a", "out.log")))                 // a new, ignored one
	must(t, os.RemoveAll(filepath.Join(dir, "a", "b")))
	must(t, os.Symlink(outside, filepath.Join(dir, "a", "b"))) // tracked a/b/y; outside has no y
	parkAndCheck(t, r, w, snap, "restore")
	entries, err := os.ReadDir(outside)
	must(t, err)
	if len(entries) != 3 {
		t.Errorf("outside holds %d entries, want 3", len(entries))
	}
	for p, want := range map[string]string{"one": "outside 1\n", "keep": "outside keep\n", "x": "outside x\n"} {
		if got := read(t, outside, p); got != want {
			t.Errorf("outside %s = %q, want %q", p, got, want)
		}
	}
	if got := read(t, dir, "z/one"); got != "1\n" {
		t.Errorf("z/one = %q", got)
	}
}

// An agent that ran git in its worktree is captured right (its staging
// and commits do not count) and its worktree is reset the slow way when
// the index or HEAD no longer hold the snapshot; an index git merely
// refreshed does not stop the restore in Go.
func TestRestoreAfterTheAgentsGit(t *testing.T) {
	for name, tc := range map[string]struct {
		agent func(t *testing.T, dir string)
		how   string
	}{
		"add":      {func(t *testing.T, dir string) { sh(t, dir, "add", "-A") }, "reset"},
		"commit":   {func(t *testing.T, dir string) { sh(t, dir, "add", "-A"); sh(t, dir, "commit", "-q", "-m", "agent") }, "reset"},
		"checkout": {func(t *testing.T, dir string) { sh(t, dir, "checkout", "-q", "-b", "agent", "main") }, "reset"},
		"status":   {func(t *testing.T, dir string) { sh(t, dir, "update-index", "-q", "--refresh") }, "restore"},
	} {
		t.Run(name, func(t *testing.T) {
			root := diffRepo(t)
			write(t, root, map[string]string{"a.txt": "user's edit\n"}) // the snapshot is not main
			r, snap := kept(t, root)
			w, err := r.NewWorktree(t.Context(), snap, "w")
			must(t, err)
			write(t, w.Dir(), map[string]string{"z/one": "agent\n", "new.txt": "new\n"})
			tc.agent(t, w.Dir())
			cs, err := w.Capture(t.Context())
			must(t, err)
			var got []string
			for _, f := range cs.Files {
				got = append(got, f.Path)
			}
			want := []string{"new.txt", "z/one"}
			if name == "checkout" {
				want = []string{"a.txt", "new.txt", "z/one"} // main's a.txt, not the snapshot's
			}
			if fmt.Sprint(got) != fmt.Sprint(want) || w.captured != "go" {
				t.Errorf("captured %v by %s, want %v by go", got, w.captured, want)
			}
			parkAndCheck(t, r, w, snap, tc.how)
		})
	}
}

// A file the restore rewrote has index stat data git recorded before:
// the next handover's manifest does not trust it, so an edit that keeps
// its size is captured.
func TestRestoredFileIsNotTrustedNextTime(t *testing.T) {
	r, snap := kept(t, diffRepo(t))
	w, err := r.NewWorktree(t.Context(), snap, "w1")
	must(t, err)
	write(t, w.Dir(), map[string]string{"a.txt": "b\n"})
	parkAndCheck(t, r, w, snap, "restore")
	w, err = r.NewWorktree(t.Context(), snap, "w2")
	must(t, err)
	st, err := lstatFile(filepath.Join(w.Dir(), "a.txt"))
	must(t, err)
	if e := w.hand.file("a.txt"); e == nil || e.stat == st.st {
		t.Fatalf("the rewritten file's entry %+v matches its stat data %+v", e, st.st)
	}
	write(t, w.Dir(), map[string]string{"a.txt": "c\n"})
	cs, err := w.Capture(t.Context())
	must(t, err)
	if len(cs.Files) != 1 || cs.Files[0].Path != "a.txt" || w.captured != "go" {
		t.Errorf("captured %+v by %s", cs.Files, w.captured)
	}
}
