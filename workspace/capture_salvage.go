package workspace

import (
	"context"
	"fmt"
	"strings"

	"github.com/troupe-ai/troupe/messages"
)

// salvageNotes bounds the lines of git's complaints a salvage returns.
const salvageNotes = 20

// Salvage is what a failed Capture can still record: every file of the
// worktree that git add -A --ignore-errors takes (into a private index
// holding the snapshot's tree: the worktree's own is untouched), as a
// changeset without a patch (its tree in the object store: Repo.KeepChangeset
// keeps its patch, which applies to the snapshot), files over the
// Repo's limit left out as Capture leaves them; and what was not
// captured, as git named it (at most salvageNotes lines).
func (w *Worktree) Salvage(ctx context.Context) (messages.Changeset, []string, error) {
	w.dropSpecials()
	idx, done, err := w.repo.tempIndex()
	if err != nil {
		return messages.Changeset{}, nil, err
	}
	defer done()
	g := w.g.withIndex(idx)
	if _, err := g.run(ctx, nil, "read-tree", w.snap.Tree); err != nil {
		return messages.Changeset{}, nil, fmt.Errorf("salvage changes: %w", err)
	}
	return w.salvageIn(ctx, g)
}

// salvageIn is Salvage in the index of g, which holds the snapshot's
// tree (with what git add should leave alone marked skip-worktree);
// exclude are paths git add leaves out.
func (w *Worktree) salvageIn(ctx context.Context, g git, exclude ...string) (messages.Changeset, []string, error) {
	args := []string{"add", "-A", "--ignore-errors", "--", "."}
	for _, p := range exclude {
		args = append(args, ":(exclude,literal)"+p)
	}
	_, stderr, code, err := g.exec(ctx, nil, args...)
	if err != nil {
		return messages.Changeset{}, nil, fmt.Errorf("salvage changes: %w", err)
	}
	var left []string
	for line := range strings.SplitSeq(stderr, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "error: ") || strings.HasPrefix(line, "fatal: ") {
			if len(left) == salvageNotes {
				left = append(left, "...")
				break
			}
			left = append(left, line)
		}
	}
	if code != 0 && len(left) == 0 {
		return messages.Changeset{}, nil, fmt.Errorf("salvage changes: git add: exit status %d: %s", code, stderr)
	}
	tree, err := g.line(ctx, "write-tree")
	if err != nil {
		return messages.Changeset{}, nil, fmt.Errorf("salvage changes: %w", err)
	}
	over, err := w.dropOversizeIn(ctx, g, tree)
	if err == nil && len(over) > 0 {
		tree, err = g.line(ctx, "write-tree")
	}
	if err != nil {
		return messages.Changeset{}, nil, fmt.Errorf("salvage changes: %w", err)
	}
	for _, f := range over {
		left = append(left, fmt.Sprintf("%s: %d bytes, over agent.max_change_bytes", f.Path, f.Bytes))
	}
	cs, err := diffTrees(ctx, g, w.snap.Tree, tree, false)
	if err != nil {
		return messages.Changeset{}, nil, fmt.Errorf("salvage changes: %w", err)
	}
	cs.Snapshot, cs.Oversize = w.snap.Commit, over
	return cs, left, nil
}
