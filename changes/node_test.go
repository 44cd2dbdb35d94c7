package changes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/workspace"
)

// requesterAndNode makes a requester's repository with an uncommitted
// edit (g.go: G = 2), its snapshot, and a node's store over a clone of
// the repository (which lacks the edit).
func requesterAndNode(t *testing.T) (Local, messages.TaskSnapshot, *Node) {
	t.Helper()
	req := gitRepo(t, map[string]string{"g.go": "package p\n\nvar G = 1\n"})
	write(t, req, "g.go", "package p\n\nvar G = 2\n")
	node := filepath.Join(t.TempDir(), "node")
	testfiles.Git(t, filepath.Dir(node), "clone", "-q", req, node)
	tr, snap := requesterSnapshot(t, req)
	n := NewNode(Dirs{Root: node, Data: filepath.Join(node, ".troupe", "snapshots"), State: t.TempDir()}, 2, 0, zerolog.Nop())
	t.Cleanup(n.Close)
	return tr, snap, n
}

// requesterSnapshot opens the requester's workspace ws (closed with the
// test) and takes its snapshot: the Local transport from it, and the
// snapshot as a task carries it.
func requesterSnapshot(t *testing.T, ws string) (Local, messages.TaskSnapshot) {
	t.Helper()
	ctx := context.Background()
	repo, err := workspace.Open(ctx, ws, workspace.Options{DataDir: filepath.Join(ws, ".troupe"), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = repo.Close(context.Background()) })
	snap, err := repo.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return Local{From: repo}, messages.TaskSnapshot{Commit: snap.Commit, Tree: snap.Tree, Base: snap.Base, Prefix: snap.Prefix}
}

// A node's task works in a worktree of its requester's snapshot (the
// objects brought by the transport), and its edit comes back as a
// changeset of that snapshot; the node's checkout is not written.
func TestNodeWorksInTheRequestersSnapshot(t *testing.T) {
	tr, snap, n := requesterAndNode(t)
	h, err := n.Start(context.Background(), tr, snap, "r1-w1-0")
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := os.ReadFile(filepath.Join(h.Root(), "g.go")); string(g) != "package p\n\nvar G = 2\n" {
		t.Fatalf("the worktree's g.go %q, want the requester's uncommitted edit", g)
	}
	write(t, h.Root(), "g.go", "package p\n\nvar G = 3\n")
	cs, err := h.End(context.Background(), tr, true, "r1", "w1")
	if err != nil || cs == nil {
		t.Fatalf("changeset %+v %v", cs, err)
	}
	if cs.SnapshotTree != snap.Tree || cs.PatchSHA256 != messages.Digest(cs.Patch) || !strings.Contains(string(cs.Patch), "+var G = 3") {
		t.Errorf("changeset %+v\n%s", cs, cs.Patch)
	}
	if g, _ := os.ReadFile(filepath.Join(n.dirs.Root, "g.go")); string(g) != "package p\n\nvar G = 1\n" {
		t.Errorf("the node's checkout was written: %q", g)
	}
}

// A read-only kind's worktree and one with no change give no changeset.
func TestNodeReadOnlyOrUnchangedGivesNothing(t *testing.T) {
	tr, snap, n := requesterAndNode(t)
	for i, mayChange := range []bool{false, true} {
		h, err := n.Start(context.Background(), tr, snap, "r1-w"+string(rune('a'+i)))
		if err != nil {
			t.Fatal(err)
		}
		if !mayChange {
			write(t, h.Root(), "g.go", "changed, yet not to be captured\n")
		}
		if cs, err := h.End(context.Background(), tr, mayChange, "r1", "w"); cs != nil || err != nil {
			t.Errorf("may change %v: %+v %v", mayChange, cs, err)
		}
	}
}

// A capture that fails on the node keeps the worktree there, whole, and
// the error says where.
func TestNodeCaptureErrorKeepsTheWorktree(t *testing.T) {
	tr, snap, n := requesterAndNode(t)
	h, err := n.Start(context.Background(), tr, snap, "r1-w1-0")
	if err != nil {
		t.Fatal(err)
	}
	write(t, h.Root(), "g.go", "package p\n\nvar G = 3\n")
	write(t, h.Root(), "sub/.GIT/x", "x\n")
	cs, err := h.End(context.Background(), tr, true, "r1", "w1")
	if err == nil || cs != nil {
		t.Fatalf("changeset %+v, error %v: want an error", cs, err)
	}
	kept := keptPath(t, err.Error(), "the worktree is kept on the node at ")
	if g, err := os.ReadFile(filepath.Join(kept, "g.go")); err != nil || !strings.Contains(string(g), "G = 3") {
		t.Errorf("the kept worktree lost the edit: %q %v", g, err)
	}
}

// refusingShip is the Local transport whose changes bucket refuses
// every patch, as a full or unreachable bucket does.
type refusingShip struct{ Local }

func (refusingShip) Ship(context.Context, *workspace.Repo, *messages.Changeset) error {
	return errors.New("the changes bucket refused the patch")
}

// A changeset that cannot travel keeps the worktree and the patch on the
// node; the error names both, and the patch applies to the snapshot.
func TestNodeShipErrorKeepsTheWorktreeAndThePatch(t *testing.T) {
	tr, snap, n := requesterAndNode(t)
	h, err := n.Start(context.Background(), tr, snap, "r1-w1-0")
	if err != nil {
		t.Fatal(err)
	}
	write(t, h.Root(), "g.go", "package p\n\nvar G = 3\n")
	cs, err := h.End(context.Background(), refusingShip{tr}, true, "r1", "w1")
	if err == nil || cs != nil {
		t.Fatalf("changeset %+v, error %v: want an error", cs, err)
	}
	kept := keptPath(t, err.Error(), "the worktree is kept on the node at ")
	if g, err := os.ReadFile(filepath.Join(kept, "g.go")); err != nil || !strings.Contains(string(g), "G = 3") {
		t.Errorf("the kept worktree lost the edit: %q %v", g, err)
	}
	patch := keptPath(t, err.Error(), "its patch is kept on the node at ")
	b, rerr := os.ReadFile(patch)
	if rerr != nil || !strings.Contains(string(b), "+var G = 3") {
		t.Fatalf("the kept patch %s: %q %v", patch, b, rerr)
	}
	testfiles.Git(t, tr.From.Root(), "apply", "--check", patch) // the requester's tree is the snapshot's
}

// keptPath is the path that follows lead in msg, up to a ";" or the end.
func keptPath(t *testing.T, msg, lead string) string {
	t.Helper()
	_, rest, ok := strings.Cut(msg, lead)
	if !ok {
		t.Fatalf("%q does not say %q", msg, lead)
	}
	path, _, _ := strings.Cut(rest, ";")
	return path
}

// shippedEdit is the changeset a node task on the requester's snapshot
// ships after setting g.go's G to 3 (the snapshot's G is 2, HEAD's 1).
func shippedEdit(t *testing.T) (Local, *messages.Changeset) {
	t.Helper()
	tr, snap, n := requesterAndNode(t)
	h, err := n.Start(context.Background(), tr, snap, "r1-w1-0")
	if err != nil {
		t.Fatal(err)
	}
	write(t, h.Root(), "g.go", "package p\n\nvar G = 3\n")
	cs, err := h.End(context.Background(), tr, true, "r1", "w1")
	if err != nil {
		t.Fatal(err)
	}
	return tr, cs
}

// tamperedBase is cs claiming a base the snapshot never had.
func tamperedBase(cs *messages.Changeset) messages.Changeset {
	bad := *cs
	bad.Patch = []byte(strings.Replace(string(cs.Patch), "-var G = 2", "-var G = 9", 1))
	return bad
}
