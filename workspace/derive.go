package workspace

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

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
	cs, err := r.derive(ctx, snap, len(patch) == 0, func() (io.Reader, func(), error) {
		return bytes.NewReader(patch), func() {}, nil
	}, true)
	if err == nil && len(patch) > 0 {
		cs.PatchSHA256 = messages.Digest(cs.Patch)
	}
	return cs, err
}

// DeriveFile is Derive of a spooled patch (a node's that was too large
// to travel inline): git reads it from its file, and the changeset
// carries no patch (like one of CaptureTree: Apply lands it from the
// object store and streams its patch from git where one is kept), so no
// buffer of ours holds the changes whatever their size.
func (r *Repo) DeriveFile(ctx context.Context, snap Snapshot, p PatchFile) (messages.Changeset, error) {
	st, err := os.Stat(p.Path)
	if err != nil {
		return messages.Changeset{Snapshot: snap.Commit, SnapshotTree: snap.Tree}, fmt.Errorf("derive changes: %w", err)
	}
	return r.derive(ctx, snap, st.Size() == 0, func() (io.Reader, func(), error) {
		f, err := p.Open()
		if err != nil {
			return nil, nil, err
		}
		return f, func() { _ = f.Close() }, nil
	}, false)
}

// patchSource opens a patch for reading and returns how to close it.
type patchSource func() (io.Reader, func(), error)

// derive is Derive of the patch src opens (none when empty), the
// derived changeset carrying its own patch when withPatch.
func (r *Repo) derive(ctx context.Context, snap Snapshot, empty bool, src patchSource, withPatch bool) (messages.Changeset, error) {
	cs := messages.Changeset{Snapshot: snap.Commit, SnapshotTree: snap.Tree}
	tree, err := r.g.line(ctx, "rev-parse", "--verify", "--end-of-options", snap.Commit+"^{tree}")
	if err != nil {
		return cs, fmt.Errorf("derive changes: snapshot %.12s: %w", snap.Commit, err)
	}
	if tree != snap.Tree {
		return cs, fmt.Errorf("derive changes: snapshot %.12s has tree %.12s, not %.12s", snap.Commit, tree, snap.Tree)
	}
	if empty {
		cs.Tree = snap.Tree
		return cs, nil
	}
	if tree, err = r.patchedTree(ctx, snap.Tree, src); err != nil {
		return cs, fmt.Errorf("derive changes: %w", err)
	}
	diff, err := diffTrees(ctx, r.g, snap.Tree, tree, withPatch)
	if err != nil {
		return cs, fmt.Errorf("derive changes: %w", err)
	}
	cs.Tree, cs.Files, cs.Patch = tree, diff.Files, diff.Patch
	return cs, nil
}

// patchedTree writes the tree of base with the patch src opens applied
// (to a temporary index; no work tree is touched; git reads the patch
// from its input) and returns its ID.
func (r *Repo) patchedTree(ctx context.Context, base string, src patchSource) (string, error) {
	idx, done, err := r.tempIndex()
	if err != nil {
		return "", err
	}
	defer done()
	g := r.g.withIndex(idx)
	if _, err := g.run(ctx, nil, "read-tree", base); err != nil {
		return "", err
	}
	in, closeIn, err := src()
	if err != nil {
		return "", err
	}
	err = g.runFrom(ctx, in, "apply", "--cached", "--binary", "--whitespace=nowarn", "-")
	closeIn()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadChangeset, err)
	}
	return g.line(ctx, "write-tree")
}
