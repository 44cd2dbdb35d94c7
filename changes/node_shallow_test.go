package changes

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/messages"
)

// A node whose checkout is a shallow clone (git clone --depth 1) runs a
// task in its requester's snapshot: the thin bundle, whose prerequisite
// (the snapshot's base) the clone holds without its parents, unbundles
// (git used to refuse it: "Failed to traverse parents"), and the
// worker's edit comes back and lands; the store's tidy walks its
// history as far as the clone has it.
func TestShallowNodeWorksInTheSnapshot(t *testing.T) {
	req := gitRepo(t, map[string]string{"g.go": "package p\n\nvar G = 1\n"})
	write(t, req, "h.go", "package p\n")
	testfiles.Git(t, req, "add", "-A")
	testfiles.Git(t, req, "commit", "-q", "-m", "second")
	write(t, req, "g.go", "package p\n\nvar G = 2\n")
	node := filepath.Join(t.TempDir(), "node")
	testfiles.Git(t, filepath.Dir(node), "clone", "-q", "--depth", "1", "file://"+req, node)
	if got := testfiles.Git(t, node, "rev-parse", "--is-shallow-repository"); got != "true" {
		t.Fatalf("the node's clone is not shallow: %s", got)
	}
	ctx := context.Background()
	tr, snap := requesterSnapshot(t, req)
	n := NewNode(Dirs{Root: node, Data: filepath.Join(node, ".troupe", "snapshots"), State: t.TempDir()}, 2, 0, zerolog.Nop())
	t.Cleanup(n.Close)
	h, err := n.Start(ctx, tr, snap, "r1-w1-0")
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := os.ReadFile(filepath.Join(h.Root(), "g.go")); string(g) != "package p\n\nvar G = 2\n" {
		t.Fatalf("the worktree's g.go %q, want the requester's uncommitted edit", g)
	}
	write(t, h.Root(), "g.go", "package p\n\nvar G = 3\n")
	cs, err := h.End(ctx, tr, true, "r1", "w1")
	if err != nil || cs == nil {
		t.Fatalf("changeset %+v %v", cs, err)
	}
	if _, err := n.keeper.Tidy(ctx, true); err != nil { // git's repack walks the store's history too
		t.Fatalf("tidy the shallow node's store: %v", err)
	}
	r := openRun(t, req, "worktree")
	out, why := r.bringRemote(nil, "r1", "w1", true, Remote{Node: "n1", Changeset: cs})
	if why != "" || out == nil || out.Status != messages.ChangeStatusApplied {
		t.Fatalf("outcome %+v, refusal %q", out, why)
	}
	if g, _ := os.ReadFile(filepath.Join(req, "g.go")); string(g) != "package p\n\nvar G = 3\n" {
		t.Errorf("the workspace's g.go %q after the land", g)
	}
}
