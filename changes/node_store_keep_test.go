package changes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/workspace"
)

// lfsObjectOf is the git lfs object of content.
func lfsObjectOf(content string) messages.LFSObject {
	sum := sha256.Sum256([]byte(content))
	return messages.LFSObject{OID: hex.EncodeToString(sum[:]), Size: int64(len(content))}
}

// workerBin is what work writes as task i's w<i>.bin.
func workerBin(i int) string { return strings.Repeat(fmt.Sprintf("worker lfs %d\n", i), 3000) }

// Work kept on the node survives its store's housekeeping: a task whose
// changeset could not travel keeps its worktree and its patch; tasks
// after it, each tidying the store, leave the kept worktree whole and
// keep the git lfs object of the worker's file the kept patch names
// (the worktree's files are all it needs: its record and its snapshot
// may go).
func TestNodeStoreKeepsKeptWork(t *testing.T) {
	f := newLFSFleet(t)
	h := f.start(t, f.tr, f.snapshot(t, 0), 0)
	work(t, h, 0)
	_, err := h.End(context.Background(), refusingShip{f.tr}, true, "r1", "w0")
	f.n.tidies.Wait()
	if err == nil {
		t.Fatal("the refused changeset gave no error")
	}
	kept := keptPath(t, err.Error(), "the worktree is kept on the node at ")
	patch := keptPath(t, err.Error(), "its patch is kept on the node at ")
	obj := lfsObjectOf(workerBin(0))
	if b, _ := os.ReadFile(patch); !strings.Contains(string(b), "+oid sha256:"+obj.OID) {
		t.Fatalf("the kept patch does not name w0.bin's git lfs object:\n%s", b)
	}
	for i := 1; i <= 3; i++ {
		h := f.start(t, f.tr, f.snapshot(t, i), i)
		work(t, h, i)
		f.end(t, h, i)
	}
	if _, err := f.n.keeper.Tidy(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"f0.bin": binOf(0), "w0.bin": workerBin(0), "u0.txt": "uncommitted 0\n", "g.go": "package g\n\n// task 0\n"} {
		if b, err := os.ReadFile(filepath.Join(kept, name)); err != nil || string(b) != want {
			t.Errorf("the kept worktree's %s: %.60q %v", name, b, err)
		}
	}
	if _, err := os.Stat(patch); err != nil {
		t.Errorf("the kept patch: %v", err)
	}
	if !f.n.repo.HasLFS(obj) {
		t.Errorf("the git lfs object of w0.bin, which the kept patch names, was dropped")
	}
	if f.n.repo.HasLFS(lfsObjectOf(workerBin(1))) {
		t.Errorf("the git lfs object of a shipped worker's file was kept")
	}
}

// A task running while its node's store is tidied, again and again, is
// unharmed: its worktree whole, its snapshot's git objects and git lfs
// object kept, its changeset captured and shipped whole.
func TestNodeStoreTidyLeavesARunningTask(t *testing.T) {
	f := newLFSFleet(t)
	running := f.start(t, f.tr, f.snapshot(t, 0), 0)
	for i := 1; i <= 3; i++ {
		h := f.start(t, f.tr, f.snapshot(t, i), i)
		work(t, h, i)
		f.end(t, h, i)
		if tidy, err := f.n.keeper.Tidy(context.Background(), true); err != nil || tidy.Busy || !tidy.Git || !tidy.LFS {
			t.Fatalf("tidy %+v %v", tidy, err)
		}
	}
	if !f.n.repo.HasLFS(lfsObjectOf(binOf(0))) {
		t.Errorf("the git lfs object of the running task's snapshot was dropped")
	}
	if b, _ := os.ReadFile(filepath.Join(running.Root(), "f0.bin")); string(b) != binOf(0) {
		t.Errorf("the running task's f0.bin: %.60q", b)
	}
	work(t, running, 0)
	cs := f.end(t, running, 0)
	if cs.LFS[0] != lfsObjectOf(workerBin(0)) || !strings.Contains(string(cs.Patch), "+oid sha256:"+cs.LFS[0].OID) {
		t.Errorf("the running task's changeset %+v\n%s", cs, cs.Patch)
	}
}

// tidyingTransport is the Local transport that, while a task fetches its
// snapshot and while it ships its changeset, has another node sharing
// the data directory try to tidy the store.
type tidyingTransport struct {
	Local
	other *Node
	tried []workspace.StoreTidy
}

func (tt *tidyingTransport) tidy(ctx context.Context) error {
	tidy, err := tt.other.keeper.Tidy(ctx, true)
	tt.tried = append(tt.tried, tidy)
	return err
}

func (tt *tidyingTransport) Fetch(ctx context.Context, repo *workspace.Repo, snap messages.TaskSnapshot) error {
	if err := tt.tidy(ctx); err != nil {
		return err
	}
	return tt.Local.Fetch(ctx, repo, snap)
}

func (tt *tidyingTransport) Ship(ctx context.Context, from *workspace.Repo, cs *messages.Changeset) error {
	if err := tt.tidy(ctx); err != nil {
		return err
	}
	return tt.Local.Ship(ctx, from, cs)
}

// Two nodes sharing a data directory: a tidy by one while the other's
// task fetches its snapshot (which no worktree holds yet) or ships its
// changeset (whose objects no worktree reaches) does nothing, and the
// task goes on whole.
func TestNodeStoreTidyWaitsForATaskInFlight(t *testing.T) {
	f := newLFSFleet(t)
	other := NewNode(f.n.dirs, 1, 0, f.n.log)
	other.bounds = tightBounds
	t.Cleanup(other.Close)
	other.mu.Lock()
	_, err := other.open(context.Background())
	other.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	tt := &tidyingTransport{Local: f.tr, other: other}
	h := f.start(t, tt, f.snapshot(t, 0), 0)
	work(t, h, 0)
	cs, err := h.End(context.Background(), tt, true, "r1", "w0")
	f.n.tidies.Wait()
	if err != nil || cs == nil || len(cs.LFS) != 1 || !strings.Contains(string(cs.Patch), "+// task 0") {
		t.Fatalf("changeset %+v: %v", cs, err)
	}
	if len(tt.tried) != 2 || !tt.tried[0].Busy || !tt.tried[1].Busy {
		t.Errorf("the other node's tidies during the fetch and the shipping: %+v, want both Busy", tt.tried)
	}
	// Once the task has ended, the other node tidies.
	if tidy, err := other.keeper.Tidy(context.Background(), true); err != nil || tidy.Busy {
		t.Errorf("the other node's tidy once the task ended: %+v %v", tidy, err)
	}
}
