package workspace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
)

// A sparse checkout leaves the files outside the user's cone out of the
// work tree (their index entries carry skip-worktree). A snapshot takes
// them from the index as they are (unchanged), a worktree holds every
// file of the snapshot (troupe's home does not copy the sparse settings)
// and a capture sees every path. A changeset that changes a file outside
// the cone meets no file in the workspace to merge with: it conflicts,
// the whole changeset (the in-cone edits too) is kept as a patch, and
// the outcome's reason says the file is outside the cone, never
// "applied" with the file missing.

// outsideCone returns those of paths (slash-separated, relative to the
// top) that the user's index marks skip-worktree: outside a sparse
// checkout's cone. It reads a copy of the index, taken without
// following a symlink; none when there is no index to read.
func (r *Repo) outsideCone(ctx context.Context, paths []string) []string {
	if r.private || r.gitDir == "" || len(paths) == 0 {
		return nil
	}
	data, err := readBeneath(r.gitDir, "index", 0)
	if err != nil || len(data) == 0 {
		return nil
	}
	idx, done, err := r.tempIndex()
	if err != nil {
		return nil
	}
	defer done()
	if err := os.WriteFile(idx, data, 0o600); err != nil {
		return nil
	}
	args := []string{"ls-files", "-t", "-z", "--"}
	for _, p := range paths {
		args = append(args, ":(literal)"+p)
	}
	out, err := r.g.withIndex(idx).run(ctx, nil, args...)
	if err != nil {
		return nil
	}
	var outside []string
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		if p, ok := strings.CutPrefix(string(rec), "S "); ok {
			outside = append(outside, p)
		}
	}
	return outside
}

// coneReason is the reason of a conflict on files outside the cone.
func coneReason(outside []string) string {
	return fmt.Sprintf("%s outside the workspace's sparse-checkout cone, so not in its work tree: "+
		"widen the cone (git sparse-checkout add) and apply the kept patch", strings.Join(outside, ", "))
}
