package workspace

import (
	"context"
	"fmt"

	"github.com/troupe-ai/troupe/messages"
)

// Derive is the changeset patch makes of snap, as this repository computes
// it: the tree of snap's files with patch applied, the files that differ
// and the patch between the two trees. It is how a remote agent's changes
// are taken in: from the snapshot the requester sent and the patch alone,
// never from the tree, base or file list a node's result names (Apply
// then merges the derived tree, which Derive wrote to this repository's
// objects). snap must be a snapshot this repository took; a patch that
// does not apply to it is ErrBadChangeset.
func (r *Repo) Derive(ctx context.Context, snap Snapshot, patch []byte) (messages.Changeset, error) {
	cs := messages.Changeset{Snapshot: snap.Commit, SnapshotTree: snap.Tree}
	tree, err := r.g.line(ctx, "rev-parse", "--verify", "--end-of-options", snap.Commit+"^{tree}")
	if err != nil {
		return cs, fmt.Errorf("derive changes: snapshot %.12s: %w", snap.Commit, err)
	}
	if tree != snap.Tree {
		return cs, fmt.Errorf("derive changes: snapshot %.12s has tree %.12s, not %.12s", snap.Commit, tree, snap.Tree)
	}
	if len(patch) == 0 {
		cs.Tree = snap.Tree
		return cs, nil
	}
	if tree, err = r.patchedTree(ctx, snap.Tree, patch); err != nil {
		return cs, fmt.Errorf("derive changes: %w", err)
	}
	diff, err := diffTrees(ctx, r.g, snap.Tree, tree, true)
	if err != nil {
		return cs, fmt.Errorf("derive changes: %w", err)
	}
	cs.Tree, cs.Files, cs.Patch = tree, diff.Files, diff.Patch
	cs.PatchSHA256 = messages.Digest(cs.Patch)
	return cs, nil
}

// patchedTree writes the tree of base with patch applied (to a temporary
// index; no work tree is touched) and returns its ID.
func (r *Repo) patchedTree(ctx context.Context, base string, patch []byte) (string, error) {
	idx, done, err := r.tempIndex()
	if err != nil {
		return "", err
	}
	defer done()
	g := r.g.withIndex(idx)
	if _, err := g.run(ctx, nil, "read-tree", base); err != nil {
		return "", err
	}
	if _, err := g.run(ctx, patch, "apply", "--cached", "--binary", "--whitespace=nowarn", "-"); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadChangeset, err)
	}
	return g.line(ctx, "write-tree")
}
