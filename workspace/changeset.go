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
	args := append([]string{"add", "-A", "--ignore-errors", "--", "."}, w.repo.excludes()...)
	if _, err := w.g.run(ctx, nil, args...); err != nil {
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
	status, err := g.run(ctx, nil, "diff-tree", "-r", "-z", "--no-renames", "--name-status", a, b)
	if err != nil {
		return cs, err
	}
	num, err := g.run(ctx, nil, "diff-tree", "-r", "-z", "--no-renames", "--numstat", a, b)
	if err != nil {
		return cs, err
	}
	if cs.Patch, err = g.run(ctx, nil, "diff-tree", "-p", "--binary", "--full-index", "--no-renames", a, b); err != nil {
		return cs, err
	}
	counts := parseNumstat(num)
	fields := bytes.Split(bytes.TrimSuffix(status, []byte{0}), []byte{0})
	for i := 0; i+1 < len(fields); i += 2 {
		fc := messages.FileChange{Path: string(fields[i+1]), Status: statusName(string(fields[i]))}
		if c, ok := counts[fc.Path]; ok {
			fc.Added, fc.Deleted, fc.Binary = c.Added, c.Deleted, c.Binary
		}
		cs.Files = append(cs.Files, fc)
	}
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

// parseNumstat reads diff --numstat -z output: "added\tdeleted\tpath\0"
// per file, "-" counts for a binary file.
func parseNumstat(out []byte) map[string]messages.FileChange {
	m := map[string]messages.FileChange{}
	for _, rec := range bytes.Split(out, []byte{0}) {
		parts := bytes.SplitN(rec, []byte{'\t'}, 3)
		if len(parts) != 3 {
			continue
		}
		var fc messages.FileChange
		if string(parts[0]) == "-" {
			fc.Binary = true
		} else {
			fc.Added, _ = strconv.Atoi(string(parts[0]))
			fc.Deleted, _ = strconv.Atoi(string(parts[1]))
		}
		m[string(parts[2])] = fc
	}
	return m
}
