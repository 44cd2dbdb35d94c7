package workspace

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestParkChild is the child of TestParkedWorktreeKilledMidSwitch: in
// the workspace its TROUPE_TEST_PARK_CHILD names, a worker's worktree
// is captured and removed, parked for reuse while the workspace has
// moved on (a newer snapshot), and the process waits for its SIGKILL
// once the parked worktree's files are switched and its HEAD not yet
// moved. Run alone, it does nothing.
func TestParkChild(t *testing.T) {
	root := os.Getenv("TROUPE_TEST_PARK_CHILD")
	if root == "" {
		return
	}
	r, err := Open(context.Background(), root, Options{KeepIdle: 1, Worktrees: WorktreesCheckout})
	must(t, err)
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	w, err := r.NewWorktree(t.Context(), snap, "worker")
	must(t, err)
	_, err = w.CaptureTree(t.Context())
	must(t, err)
	write(t, root, map[string]string{"a.txt": "the user's next edit\n"})
	_, err = r.Snapshot(t.Context()) // the latest: what the parked worktree is prepared for
	must(t, err)
	parkHook = func(step string) {
		if step == "switched" {
			os.Stdout.WriteString("\n" + landingMark + "\n")
			_, _ = io.Copy(io.Discard, os.Stdin) // until killed
		}
	}
	must(t, w.Remove(t.Context()))
	if w.ready == nil {
		t.Fatal("the worktree was not parked")
	}
	<-w.ready
	t.Fatalf("the parked worktree was prepared without switching its files: %v", w.err)
}

// A process killed while it prepared a parked worktree (its files
// rewritten for the newer snapshot, its HEAD and snapshot record not
// yet moved) leaves a worktree whose files differ from the snapshot it
// records: Prune keeps nothing of it (no agent made that diff) and
// removes it.
func TestParkedWorktreeKilledMidSwitch(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	write(t, root, map[string]string{".troupe/.gitignore": "*\n"})
	killTestChild(t, "TestParkChild", "its parked worktree's switch", "TROUPE_TEST_PARK_CHILD="+root)
	dead, _ := filepath.Glob(filepath.Join(root, ".troupe", "worktrees", "*-worker", "a.txt"))
	if len(dead) != 1 || read(t, filepath.Dir(dead[0]), "a.txt") != "the user's next edit\n" {
		t.Fatalf("the killed process's parked worktree was not switched: %v", dead)
	}
	r, err := Open(t.Context(), root, Options{Worktrees: WorktreesCheckout})
	must(t, err)
	defer r.Close(t.Context())
	kept, err := r.PruneKeep(t.Context())
	must(t, err)
	if len(kept) != 0 {
		t.Errorf("Prune kept %+v of a parked worktree, which held no agent's work", kept)
	}
	if left, _ := filepath.Glob(filepath.Join(root, ".troupe", "worktrees", "*")); len(left) != 0 {
		t.Errorf("left in the worktrees: %v", left)
	}
	if runs, _ := filepath.Glob(filepath.Join(root, ".troupe", "runs", "killed-*")); len(runs) != 0 {
		t.Errorf("kept as a killed process's work: %v", runs)
	}
}

// A parked worktree handed to the next agent is the agent's from then
// on: killed with that agent's edit in it, its work is kept by Prune.
func TestReusedWorktreeKilledKeepsItsWork(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	write(t, root, map[string]string{".troupe/.gitignore": "*\n"})
	r, err := Open(t.Context(), root, Options{KeepIdle: 1, Worktrees: WorktreesCheckout})
	must(t, err)
	defer r.Close(t.Context())
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	w, err := r.NewWorktree(t.Context(), snap, "first")
	must(t, err)
	_, err = w.CaptureTree(t.Context())
	must(t, err)
	must(t, w.Remove(t.Context()))
	if w.ready == nil {
		t.Fatal("the worktree was not parked")
	}
	<-w.ready
	next, err := r.NewWorktree(t.Context(), snap, "second")
	must(t, err)
	if next.dir != w.dir {
		t.Fatalf("the parked worktree %s was not reused (got %s)", w.dir, next.dir)
	}
	write(t, next.Root(), map[string]string{"b.txt": "the second agent's\n"})
	asDead(t, next)
	kept, err := r.PruneKeep(t.Context())
	must(t, err)
	if len(kept) != 1 || len(kept[0].Files) != 1 || kept[0].Files[0] != "b.txt" {
		t.Errorf("Prune kept %+v, want the second agent's b.txt", kept)
	}
}

// TestCreateChild is the child of TestWorktreeKilledWhileMadeKeepsNothing:
// in the workspace its TROUPE_TEST_CREATE_CHILD names, it makes a
// checkout worktree and waits for its SIGKILL once the worktree is
// registered and its files not yet checked out. Run alone, it does
// nothing.
func TestCreateChild(t *testing.T) {
	root := os.Getenv("TROUPE_TEST_CREATE_CHILD")
	if root == "" {
		return
	}
	r, err := Open(context.Background(), root, Options{Worktrees: WorktreesCheckout})
	must(t, err)
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	parkHook = func(step string) {
		if step == "creating" {
			os.Stdout.WriteString("\n" + landingMark + "\n")
			_, _ = io.Copy(io.Discard, os.Stdin) // until killed
		}
	}
	_, err = r.NewWorktree(t.Context(), snap, "worker")
	t.Fatalf("the worktree was made without its creating step: %v", err)
}

// A process killed while it made a worktree (registered, its files not
// yet all written) leaves a tree whose files differ from its snapshot
// though no agent touched it: Prune keeps nothing of it and removes it.
// (Before new worktrees were registered parked, Prune kept its missing
// files as a killed process's deletions.)
func TestWorktreeKilledWhileMadeKeepsNothing(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n"})
	write(t, root, map[string]string{".troupe/.gitignore": "*\n"})
	killTestChild(t, "TestCreateChild", "its worktree's checkout", "TROUPE_TEST_CREATE_CHILD="+root)
	if dead, _ := filepath.Glob(filepath.Join(root, ".troupe", "worktrees", "*-worker")); len(dead) != 1 {
		t.Fatalf("the killed process left no worktree: %v", dead)
	}
	r, err := Open(t.Context(), root, Options{Worktrees: WorktreesCheckout})
	must(t, err)
	defer r.Close(t.Context())
	kept, err := r.PruneKeep(t.Context())
	must(t, err)
	if len(kept) != 0 {
		t.Errorf("Prune kept %+v of a worktree being made, which held no agent's work", kept)
	}
	if left, _ := filepath.Glob(filepath.Join(root, ".troupe", "worktrees", "*")); len(left) != 0 {
		t.Errorf("left in the worktrees: %v", left)
	}
	if runs, _ := filepath.Glob(filepath.Join(root, ".troupe", "runs", "killed-*")); len(runs) != 0 {
		t.Errorf("kept as a killed process's work: %v", runs)
	}
}
