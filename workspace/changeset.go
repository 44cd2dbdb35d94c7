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
func (w *Worktree) Capture(ctx context.Context) (messages.Changeset, error) {
	if _, err := w.g.run(ctx, nil, "add", "-A", "--ignore-errors", "--", "."); err != nil {
		return messages.Changeset{}, fmt.Errorf("capture changes: %w", err)
	}
	tree, err := w.g.line(ctx, "write-tree")
	if err != nil {
		return messages.Changeset{}, fmt.Errorf("capture changes: %w", err)
	}
	cs, err := diffTrees(ctx, w.g, w.snap.Tree, tree)
	if err != nil {
		return messages.Changeset{}, fmt.Errorf("capture changes: %w", err)
	}
	cs.Snapshot = w.snap.Commit
	return cs, nil
}

// diffTrees is the changeset from tree a to tree b.
func diffTrees(ctx context.Context, g git, a, b string) (messages.Changeset, error) {
	cs := messages.Changeset{Tree: b}
	if a == b {
		return cs, nil
	}
	// One diff-tree for the file list and the counts (raw records, then
	// numstat records), one for the patch.
	out, err := g.run(ctx, nil, "diff-tree", "-r", "-z", "--no-renames", "--raw", "--numstat", a, b)
	if err != nil {
		return cs, err
	}
	if cs.Patch, err = g.run(ctx, nil, "diff-tree", "-p", "--binary", "--full-index", "--no-renames", a, b); err != nil {
		return cs, err
	}
	cs.Files = parseRawNumstat(out)
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

// parseRawNumstat reads diff-tree -z --raw --numstat output: a raw record
// per file (":<modes> <ids> <status>\0<path>\0"), then a numstat record
// per file ("added\tdeleted\tpath\0", "-" counts for a binary file).
func parseRawNumstat(out []byte) []messages.FileChange {
	fields := bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0})
	var files []messages.FileChange
	at := map[string]int{}
	for i := 0; i < len(fields); i++ {
		rec := fields[i]
		if len(rec) > 0 && rec[0] == ':' && i+1 < len(fields) {
			meta := bytes.Fields(rec)
			fc := messages.FileChange{Path: string(fields[i+1]), Status: statusName(string(meta[len(meta)-1]))}
			at[fc.Path] = len(files)
			files = append(files, fc)
			i++
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
			files[j].Added, _ = strconv.Atoi(string(parts[0]))
			files[j].Deleted, _ = strconv.Atoi(string(parts[1]))
		}
	}
	return files
}
