package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Derive computes a changeset from a snapshot and a patch alone: the end
// state's tree (written to the repository, so Apply merges it) and the
// files it changes, whatever else a result might say; a patch that does
// not apply to the snapshot is ErrBadChangeset, and a snapshot whose
// commit has another tree is refused.
func TestDeriveComputesTheChangesetFromThePatch(t *testing.T) {
	ctx := t.Context()
	dir := newRepo(t, map[string]string{"a.txt": "one\n"})
	write(t, dir, map[string]string{"b.txt": "two\n"}) // never committed
	repo, snap := openSnap(t, dir)
	wt, err := repo.NewWorktree(ctx, snap, "w1")
	if err != nil {
		t.Fatal(err)
	}
	write(t, wt.Root(), map[string]string{"a.txt": "one, changed\n"})
	if err := os.Remove(filepath.Join(wt.Root(), "b.txt")); err != nil {
		t.Fatal(err)
	}
	captured, err := wt.Capture(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = wt.Remove(ctx)

	cs, err := repo.Derive(ctx, snap, captured.Patch)
	if err != nil {
		t.Fatal(err)
	}
	if cs.Tree != captured.Tree || cs.Snapshot != snap.Commit || cs.SnapshotTree != snap.Tree || cs.PatchSHA256 == "" {
		t.Errorf("derived %+v, captured tree %s", cs, captured.Tree)
	}
	var files []string
	for _, f := range cs.Files {
		files = append(files, f.Path+":"+f.Status)
	}
	if strings.Join(files, ",") != "a.txt:modified,b.txt:deleted" {
		t.Errorf("files %v", files)
	}
	if _, err := repo.Derive(ctx, snap, []byte("diff --git a/c.txt b/c.txt\n--- a/c.txt\n+++ b/c.txt\n@@ -1 +1 @@\n-x\n+y\n")); !errors.Is(err, ErrBadChangeset) {
		t.Errorf("a patch that does not apply: %v", err)
	}
	other := snap
	other.Tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
	if _, err := repo.Derive(ctx, other, captured.Patch); err == nil || !strings.Contains(err.Error(), "has tree") {
		t.Errorf("a snapshot named with another tree: %v", err)
	}
}
