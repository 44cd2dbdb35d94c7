package workspace

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"github.com/troupe-ai/troupe/messages"
)

// Capture records the worktree's changes relative to its snapshot: every
// file added, modified or deleted (ignored files aside), with a
// binary-safe patch that applies to the snapshot.
//
// The tree is written in Go when the worktree's manifest allows
// (capture_go.go); otherwise, and whenever the Go path meets something
// it does not model, by git add -A and git write-tree in the worktree's
// index.
//
// The patch is for a changeset that travels as bytes (to or from a
// node, a nested carry); one landed where it was captured needs none:
// CaptureTree.
func (w *Worktree) Capture(ctx context.Context) (messages.Changeset, error) {
	return w.capture(ctx, true)
}

// CaptureTree is Capture without the patch: the changeset names its
// tree (written to the object store, blobs streamed) and its files, so
// its memory does not follow the files' sizes. Repo.Apply lands it from
// the object store, and streams its patch from git where one is kept.
func (w *Worktree) CaptureTree(ctx context.Context) (messages.Changeset, error) {
	return w.capture(ctx, false)
}

// capture is Capture, with the patch when withPatch.
func (w *Worktree) capture(ctx context.Context, withPatch bool) (messages.Changeset, error) {
	w.dropSpecials()
	tree, over, err := w.captureTree(ctx)
	if err == nil {
		tree, err = w.cleanFiltered(ctx, tree)
	}
	if err != nil {
		return messages.Changeset{}, fmt.Errorf("capture changes: %w", err)
	}
	cs, err := diffTrees(ctx, w.g, w.snap.Tree, tree, withPatch)
	if err != nil {
		return messages.Changeset{}, fmt.Errorf("capture changes: %w", err)
	}
	cs.Snapshot, cs.Oversize = w.snap.Commit, over
	return cs, nil
}

// captureTree writes the tree of the worktree's files and returns its
// ID and the files left out of it for their size.
func (w *Worktree) captureTree(ctx context.Context) (string, []messages.OversizeFile, error) {
	if w.hand != nil {
		tree, over, err := w.captureGo(ctx)
		if err == nil {
			w.captured = "go"
			return tree, over, nil
		}
		w.hand.forgetScan()
		w.hand, w.handErr = nil, err // the git path below changes the index
	}
	w.captured = "git"
	if err := addTolerant(ctx, w.g, nil, "--", "."); err != nil {
		return "", nil, err
	}
	tree, err := w.g.line(ctx, "write-tree")
	if err != nil {
		return "", nil, err
	}
	w.tree, w.stray = tree, true // the index holds tree now
	over, err := w.dropOversize(ctx, tree)
	if err != nil || len(over) == 0 {
		return tree, over, err
	}
	tree, err = w.g.line(ctx, "write-tree")
	if err != nil {
		return "", nil, err
	}
	w.tree = tree
	return tree, over, nil
}

// diffTrees is the changeset from tree a to tree b, from one diff-tree:
// raw records, numstat records, then (withPatch) an empty record and the
// patch.
func diffTrees(ctx context.Context, g git, a, b string, withPatch bool) (messages.Changeset, error) {
	cs := messages.Changeset{Tree: b}
	if a == b {
		return cs, nil
	}
	args := []string{"diff-tree", "-r", "-z", "--no-renames", "--raw", "--numstat"}
	if withPatch {
		args = append(args, "-p", "--binary", "--full-index")
	}
	out, err := g.run(ctx, nil, append(args, a, b)...)
	if err != nil {
		return cs, err
	}
	cs.Files, cs.Patch = parseDiffTree(out)
	return cs, nil
}

// statusName names a git status letter.
func statusName(s string) string {
	switch s {
	case "A":
		return "added"
	case "D":
		return "deleted"
	default:
		return "modified"
	}
}

// parseDiffTree reads diff-tree -z --raw --numstat -p output: a raw
// record per file (":<modes> <ids> <status>\0<path>\0"), a numstat
// record per file ("added\tdeleted\tpath\0", "-" counts for a binary
// file), an empty record, then the patch, returned as it is.
func parseDiffTree(out []byte) ([]messages.FileChange, []byte) {
	var files []messages.FileChange
	at := map[string]int{}
	for len(out) > 0 {
		end := bytes.IndexByte(out, 0)
		if end < 0 {
			break
		}
		rec := out[:end]
		out = out[end+1:]
		switch {
		case len(rec) == 0:
			return files, out
		case rec[0] == ':':
			end = bytes.IndexByte(out, 0)
			if end < 0 {
				return files, nil
			}
			meta := bytes.Fields(rec)
			fc := messages.FileChange{Path: string(out[:end]), Status: statusName(string(meta[len(meta)-1]))}
			out = out[end+1:]
			at[fc.Path] = len(files)
			files = append(files, fc)
			continue
		}
		parts := bytes.SplitN(rec, []byte{'\t'}, 3)
		if len(parts) != 3 {
			continue
		}
		j, ok := at[string(parts[2])]
		if !ok {
			continue
		}
		if string(parts[0]) == "-" {
			files[j].Binary = true
		} else {
			files[j].Added, files[j].Deleted = count(parts[0]), count(parts[1])
		}
	}
	return files, nil
}

// count reads a numstat count (0 when it is not one).
func count(b []byte) int {
	n, err := strconv.ParseUint(string(b), 10, 31)
	if err != nil {
		return 0
	}
	return int(n)
}
