package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// version is one side of a file in a three-way merge.
type version struct {
	mode string // git mode: 100644, 100755, 120000, 160000; "" when absent; "dir" for a directory
	data []byte // contents, or a symlink's target
	blob string // instead of data, for a file too big to hold (mergeBig): its blob ID
}

func (v version) exists() bool { return v.mode != "" }

func (v version) equal(o version) bool {
	return v.mode == o.mode && v.blob == o.blob && bytes.Equal(v.data, o.data)
}

func (v version) regular() bool { return v.mode == "100644" || v.mode == "100755" }

// change is one file the merge writes: its new version (absent: delete).
type change struct {
	path string
	to   version
	text int         // n > 0: its contents are the nth merge of a textBatch, not yet made
	src  patchWriter // when set, writes a regular file's contents instead of to.data (mergeBig)
}

// entry is one changed path between two trees.
type entry struct {
	path             string
	oldMode, newMode string
	oldBlob, newBlob string
}

// merged is what a merge did: the conflicting paths (nothing was then
// written) and, when a path conflicts for a reason other than
// overlapping edits, why.
type merged struct {
	conflicts []string
	reasons   []string
}

// conflict records path as conflicting, for reason when not "".
func (m *merged) conflict(path, reason string) {
	m.conflicts = append(m.conflicts, path)
	if reason != "" && !slices.Contains(m.reasons, reason) {
		m.reasons = append(m.reasons, reason)
	}
}

// reason is why the paths conflict beyond overlapping edits ("" when
// that is all).
func (m *merged) reason() string { return strings.Join(m.reasons, "; ") }

// merge merges the difference between the snapshot's tree and theirs into the
// work tree, file by file. Every file is read, written and removed
// through the work tree's top directory without following a symbolic
// link (beneath.go): a path below a symlink (or a file) conflicts. When
// any path conflicts, nothing is written; the rest is written all or
// nothing (land.go), patch kept in the land's journal meanwhile.
func (r *Repo) merge(ctx context.Context, snap Snapshot, theirs, run, agent string, patch patchWriter) (merged, error) {
	entries, err := r.changedEntries(ctx, snap.Tree, theirs)
	if err != nil {
		return merged{}, err
	}
	top, err := openBeneath(r.at, ".", false)
	if err != nil {
		return merged{}, err
	}
	defer top.close()
	conv, err := r.converter(ctx, top, entries)
	if err != nil {
		return merged{}, err
	}
	big, err := r.bigEntries(ctx, top, entries)
	if err != nil {
		return merged{}, err
	}
	blobs, err := r.readBlobs(ctx, slices.DeleteFunc(slices.Clone(entries), func(e entry) bool { return big[e.path] }))
	if err != nil {
		return merged{}, err
	}
	if err := conv.checkFiltered(ctx, snap, entries); err != nil {
		return merged{}, err
	}
	var plan []change
	var m merged
	var texts textBatch // the contents both sides changed, merged together below
	for _, e := range entries {
		if why := conv.refusedWhy(e.path); why != "" {
			m.conflict(e.path, why)
			continue
		}
		var c *change
		var reason string
		if big[e.path] {
			c, reason, err = r.mergeBig(ctx, top, conv, e, len(snap.Tree)/2)
		} else {
			b := version{mode: e.oldMode, data: blobs[e.oldBlob]}
			t := version{mode: e.newMode, data: blobs[e.newBlob]}
			c, reason, err = r.mergeOne(ctx, top, conv, e.path, b, t, &texts)
		}
		if err != nil {
			return merged{}, err
		}
		switch {
		case reason == overlap:
			m.conflict(e.path, "")
		case reason != "":
			m.conflict(e.path, reason)
		case c != nil:
			plan = append(plan, *c)
		}
	}
	if plan, err = r.mergeTexts(ctx, conv, &texts, plan, &m, len(snap.Tree)/2); err != nil {
		return merged{}, err
	}
	if mayBeRename(top, conv, entries, m) && !r.anyOutsideCone(ctx, entries) {
		renamed, conflicts, routed, err := r.renameMerge(ctx, top, snap, theirs)
		if err != nil {
			return merged{}, err
		}
		if routed {
			plan, m = renamed, merged{}
			for _, p := range conflicts {
				m.conflict(p, "")
			}
		}
	}
	if len(m.conflicts) > 0 {
		return m, nil
	}
	if err := r.land(top, plan, run, agent, patch, snap.Tree, theirs); err != nil {
		if why := linkReason(err); why != "" {
			var le *linkError
			errors.As(err, &le)
			why += " (met while writing; nothing was written)"
			for _, c := range plan {
				if c.path == le.path || strings.HasPrefix(c.path, le.path+"/") {
					m.conflict(c.path, why)
				}
			}
			if len(m.conflicts) == 0 {
				m.conflict(le.path, why)
			}
			return m, nil
		}
		return merged{}, err
	}
	return m, nil
}

// overlap is the reason of a conflict of overlapping edits.
const overlap = "overlapping edits"

// linkReason is the rule that stopped a path at a symlink or a file
// where a directory should be, named for the user ("" for another error).
func linkReason(err error) string {
	var le *linkError
	switch {
	case !errors.As(err, &le):
		return ""
	case errors.Is(le.err, errSymlinkParent):
		return le.path + " is a symbolic link in the workspace: troupe never writes or deletes through one"
	default:
		return le.path + " is a file in the workspace where the changes need a directory"
	}
}

// mergeOne decides one file: the change to make (nil: none), or why it
// conflicts (overlap, or a rule it meets); contents both sides changed
// are left to texts.
func (r *Repo) mergeOne(ctx context.Context, top *dirFD, conv *converter, path string, base, theirs version, texts *textBatch) (*change, string, error) {
	if !filepath.IsLocal(filepath.FromSlash(path)) {
		return nil, "", fmt.Errorf("%s: %w", path, errOutside)
	}
	if base.mode == "160000" || theirs.mode == "160000" {
		return nil, path + " is a repository of its own (a submodule) in the changes: the merge leaves those to you", nil
	}
	ours, blocked, err := current(top, path)
	if err != nil {
		return nil, "", err
	}
	if blocked != nil && (errors.Is(blocked, errSymlinkParent) || theirs.exists()) {
		// Below a symlink nothing is read or written; below a file,
		// theirs cannot be written (ours is absent).
		return nil, linkReason(blocked), nil
	}
	if conv.converts(path) && ours.regular() {
		if ours.data, err = conv.clean(ctx, path, ours.data); err != nil {
			return nil, "", err
		}
	}
	c, reason, err := r.mergeClean(ctx, path, ours, base, theirs, texts)
	if err == nil && c != nil && c.text == 0 && c.to.regular() && conv.converts(path) {
		c.to.data, err = conv.smudge(ctx, path, c.to.data)
	}
	return c, reason, err
}

// mergeClean decides one file from its three versions in git's clean
// form (see mergeOne), as git merge-tree does (merge_git_test.go holds
// it to that): a side equal to the base takes the other; when both
// changed, they must be of one type (file or symlink), and their mode
// and contents are merged apart (a side that kept the base's takes the
// other's); contents both changed are merged by git merge-file (or with
// the others of texts, when not nil: merge_batch.go), for text files only (two-way, on an empty base, when the base was not a
// file).
func (r *Repo) mergeClean(ctx context.Context, path string, ours, base, theirs version, texts *textBatch) (*change, string, error) {
	switch {
	case ours.equal(theirs), theirs.equal(base):
		return nil, "", nil
	case ours.equal(base):
		return &change{path: path, to: theirs}, "", nil
	case !ours.exists() || !theirs.exists() || ours.regular() != theirs.regular() || ours.mode == "dir" || ours.mode == "other":
		return nil, overlap, nil
	}
	mode := ours.mode
	switch {
	case ours.mode == theirs.mode || ours.mode == base.mode:
		mode = theirs.mode
	case theirs.mode != base.mode:
		return nil, overlap, nil
	}
	var data []byte
	switch {
	case bytes.Equal(ours.data, theirs.data) || (base.exists() && bytes.Equal(ours.data, base.data)):
		data = theirs.data
	case base.exists() && bytes.Equal(theirs.data, base.data):
		data = ours.data
	case !ours.regular() || binary(ours.data) || (base.regular() && binary(base.data)) || binary(theirs.data):
		return nil, overlap, nil
	default:
		baseData := base.data
		if !base.regular() {
			baseData = nil // a base of another type: a two-way merge, as git's
		}
		if texts != nil {
			return texts.add(path, mode, ours.data, baseData, theirs.data), "", nil
		}
		merged, ok, err := r.mergeFile(ctx, ours.data, baseData, theirs.data)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			return nil, overlap, nil
		}
		data = merged
	}
	return &change{path: path, to: version{mode: mode, data: data}}, "", nil
}

// current is the work tree's version of path, read through top without
// following a symlink. blocked is set (errSymlinkParent, errNotDir, with
// the path where it stopped) when a directory above path is a symlink or
// a file: ours is then absent.
func current(top *dirFD, path string) (ours version, blocked error, err error) {
	dir, name := splitPath(path)
	d, err := top.sub(dir, false)
	switch {
	case errors.Is(err, errSymlinkParent) || errors.Is(err, errNotDir):
		return version{}, err, nil
	case errors.Is(err, fs.ErrNotExist):
		return version{}, nil, nil
	case err != nil:
		return version{}, nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer d.close()
	st, err := d.lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return version{}, nil, nil
	case err != nil:
		return version{}, nil, fmt.Errorf("read %s: %w", path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		target, err := d.readlink(name)
		return version{mode: "120000", data: []byte(target)}, nil, err
	case unix.S_IFDIR:
		return version{mode: "dir"}, nil, nil
	case unix.S_IFREG:
	default:
		return version{mode: "other"}, nil, nil
	}
	data, err := d.readFile(name, 0)
	if err != nil {
		return version{}, nil, fmt.Errorf("read %s: %w", path, err)
	}
	mode := "100644"
	if st.Mode&0o111 != 0 {
		mode = "100755"
	}
	return version{mode: mode, data: data}, nil, nil
}

// splitPath splits a slash-separated path into its directory ("." at
// the top) and its last component.
func splitPath(p string) (dir, name string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ".", p
	}
	return p[:i], p[i+1:]
}

// binary reports whether data looks binary (a NUL in its first 8 KB).
func binary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}

// mergeFile merges text files with git merge-file: the result, and false
// when they conflict. Its inputs are written in the home.
func (r *Repo) mergeFile(ctx context.Context, ours, base, theirs []byte) ([]byte, bool, error) {
	dir, err := os.MkdirTemp(r.home.tmpDir(), r.home.tmpName("merge"))
	if err != nil {
		return nil, false, fmt.Errorf("merge: %w", err)
	}
	defer os.RemoveAll(dir)
	names := []string{"ours", "base", "theirs"}
	for i, data := range [][]byte{ours, base, theirs} {
		if err := os.WriteFile(filepath.Join(dir, names[i]), data, 0o600); err != nil {
			return nil, false, fmt.Errorf("merge: %w", err)
		}
	}
	g := r.home.git()
	g.dir = dir
	out, code, err := g.runCode(ctx, nil, "merge-file", "-p", "ours", "base", "theirs")
	if err != nil {
		return nil, false, fmt.Errorf("merge: %w", err)
	}
	return out, code == 0, nil
}

// writeChange makes c's change in the tree whose top directory is top,
// following no symlink: the file replaced atomically (a symlink at its
// own path is replaced, not followed), or removed with the directories
// it leaves empty. A symlink or a file above it is an error
// (errSymlinkParent, errNotDir).
func writeChange(top *dirFD, c change) error {
	dir, name := splitPath(c.path)
	if !c.to.exists() {
		d, err := top.sub(dir, false)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("delete %s: %w", c.path, err)
		}
		err = d.remove(name)
		d.close()
		if err != nil {
			return fmt.Errorf("delete %s: %w", c.path, err)
		}
		for dir != "." {
			parent, base := splitPath(dir)
			p, err := top.sub(parent, false)
			if err != nil {
				break
			}
			gone := p.rmdir(base)
			p.close()
			if !gone {
				break
			}
			dir = parent
		}
		return nil
	}
	d, err := top.sub(dir, true)
	if err != nil {
		return fmt.Errorf("write %s: %w", c.path, err)
	}
	defer d.close()
	mode, _ := strconv.ParseUint(c.to.mode, 8, 32)
	if err := d.replace(name, uint32(mode), c.to.data); err != nil {
		return fmt.Errorf("write %s: %w", c.path, err)
	}
	return nil
}
