package workspace

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// The Go merge decides path by path and so detects no rename: a user
// who renamed a file the agent edited (or edited one the agent renamed)
// would meet a conflict, and both renaming one file would leave it
// twice. Such a merge goes to git, which detects renames: when nothing
// converts between blobs and the disk, the Go merge meets no rule of
// its own (a symlink, a submodule), and the changes may hold a rename
// (mayBeRename), the tree of the workspace as it is now is written
// (ours, in git's clean form, through the user view kept from one land
// to the next: merge_renames_view.go) and git merge-tree --write-tree merges it with the
// agent's tree on the snapshot's commit as their base, renames
// detected. When git merges cleanly, the difference from ours to git's
// tree is the land's plan (contents streamed from the object store);
// when git conflicts, the merge conflicts on git's paths.

// mayBeRename reports whether a merge's changes may hold a rename git
// would detect: nothing converts, m met no rule of its own, and the
// agent deleted a path the workspace no longer has (the user may have
// renamed it) or deleted one and added another (the agent may have),
// or m conflicts on a path the workspace no longer has.
func mayBeRename(top *dirFD, conv *converter, es []entry, m merged) bool {
	if conv != nil || len(m.reasons) > 0 {
		return false
	}
	var deleted, added bool
	for _, e := range es {
		switch {
		case e.newMode == "":
			if absent(top, e.path) {
				return true
			}
			deleted = true
		case e.oldMode == "":
			added = true
		}
	}
	return (deleted && added) || slices.ContainsFunc(m.conflicts, func(p string) bool { return absent(top, p) })
}

// absent reports whether path is absent from the work tree (a
// directory above it too).
func absent(top *dirFD, path string) bool {
	dir, name := splitPath(path)
	d, err := top.sub(dir, false)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	defer d.close()
	_, err = d.lstat(name)
	return errors.Is(err, fs.ErrNotExist)
}

// renameMerge merges the workspace as it is now with theirs, on snap's
// commit, by git merge-tree with rename detection (see above): the plan
// that makes the workspace git's merged tree, or the paths git says
// conflict; routed is false when git's answer cannot be taken (a path
// that converts or a submodule in the plan): the Go merge's stands.
func (r *Repo) renameMerge(ctx context.Context, top *dirFD, snap Snapshot, theirs string) (plan []change, conflicts []string, routed bool, err error) {
	now, err := r.userTree(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	idLen := len(snap.Tree) / 2
	ours, err := r.syntheticCommit(now, snap.Commit, idLen)
	if err != nil {
		return nil, nil, false, err
	}
	their, err := r.syntheticCommit(theirs, snap.Commit, idLen)
	if err != nil {
		return nil, nil, false, err
	}
	g := r.g
	g.conf = append(g.conf[:len(g.conf):len(g.conf)], "-c", "merge.renames=true", "-c", "diff.renames=true")
	out, code, err := g.runCode(ctx, nil, "merge-tree", "--write-tree", "--no-messages", "--name-only", ours, their)
	if err != nil || code > 1 {
		return nil, nil, false, fmt.Errorf("git merge-tree: exit %d: %v", code, err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if code == 1 {
		for _, p := range lines[1:] {
			if p != "" && !slices.Contains(conflicts, p) {
				conflicts = append(conflicts, p)
			}
		}
		return nil, conflicts, true, nil
	}
	es, err := r.changedEntries(ctx, now, strings.TrimSpace(lines[0]))
	if err != nil {
		return nil, nil, false, err
	}
	if conv, err := r.converter(ctx, top, es); err != nil || conv != nil {
		return nil, nil, false, err
	}
	for _, e := range es {
		if e.oldMode == "160000" || e.newMode == "160000" {
			return nil, nil, false, nil
		}
		c, _, err := r.bigChange(ctx, nil, e.path, version{mode: e.newMode, blob: e.newBlob})
		if err != nil {
			return nil, nil, false, err
		}
		plan = append(plan, *c)
	}
	return plan, nil, true, nil
}

// syntheticCommit writes a commit of tree with parent (troupe's, dated
// 0: it only carries a merge's sides) and returns its ID.
func (r *Repo) syntheticCommit(tree, parent string, idLen int) (string, error) {
	commit := "tree " + tree + "\nparent " + parent + "\n" +
		"author troupe <troupe@localhost> 0 +0000\ncommitter troupe <troupe@localhost> 0 +0000\n\nmerge\n"
	id := objectID(idLen, "commit", []byte(commit))
	return hex.EncodeToString(id), writeLoose(r.home.objects, id, "commit", []byte(commit))
}

// anyOutsideCone reports whether a path of es lies outside the user's
// sparse-checkout cone: absent from the workspace by the user's choice,
// not renamed; the Go merge's conflict (with its reason) stands.
func (r *Repo) anyOutsideCone(ctx context.Context, es []entry) bool {
	paths := make([]string, len(es))
	for i, e := range es {
		paths[i] = e.path
	}
	return len(r.outsideCone(ctx, paths)) > 0
}
