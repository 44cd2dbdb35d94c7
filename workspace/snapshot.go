package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/troupe-ai/troupe/internal/ignore"
)

// Snapshot is a workspace's state at one moment: the commit checked out
// (Base, "" when there is none) and a commit of the whole work tree as it
// was (Commit, whose tree is Tree and whose parent is Base).
type Snapshot struct {
	Base   string `json:"base,omitempty"`
	Tree   string `json:"tree"`
	Commit string `json:"commit"`
	// Prefix is the workspace's directory in the snapshot's tree,
	// slash-separated with a trailing slash ("" at the top).
	Prefix string `json:"prefix,omitempty"`
}

// snapshot records the workspace as it is now (Snapshot).
func (r *Repo) snapshot(ctx context.Context) (Snapshot, error) {
	idx, done, err := r.tempIndex()
	if err != nil {
		return Snapshot{}, err
	}
	defer done()
	g := r.g.withIndex(idx)
	snap := Snapshot{Prefix: r.prefix}
	read := r.readingTree()
	if r.private {
		err = r.stagePrivate(ctx, g)
	} else {
		snap.Base, _ = r.refs.line(ctx, "rev-parse", "-q", "--verify", "HEAD^{commit}")
		err = r.stageCheckout(ctx, idx, snap.Base)
		if err == nil {
			err = r.settleFiltered(ctx, idx, snap.Base)
		}
		if err == nil && r.common != "" && r.baseMoved(snap.Base) {
			err = r.home.mirrorRefs(ctx, r.refs) // the user committed: their branches moved
		}
	}
	read()
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: %w", r.root, err)
	}
	if r.snaps.staged != nil {
		r.snaps.staged() // tests: the workspace has been read
	}
	if snap.Tree, err = g.line(ctx, "write-tree"); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: %w", r.root, err)
	}
	args := []string{"commit-tree", snap.Tree, "-m", "troupe snapshot"}
	if snap.Base != "" {
		args = append(args, "-p", snap.Base)
	}
	if snap.Commit, err = g.line(ctx, args...); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: %w", r.root, err)
	}
	r.idleMu.Lock()
	r.latest = snap
	r.idleMu.Unlock()
	return snap, nil
}

// baseMoved reports whether base differs from the latest snapshot's
// (false before the first: Open copied the refs).
func (r *Repo) baseMoved(base string) bool {
	r.idleMu.Lock()
	defer r.idleMu.Unlock()
	return r.latest.Tree != "" && r.latest.Base != base
}

// stageCheckout fills the index file idx with the work tree of a
// checkout, starting from a copy of the user's index (read without
// following a symlink) so unchanged files are not read again; or, when
// there is none to use (missing, a symlink, a split index whose shared
// part lives in the user's git directory), from the tree of base.
func (r *Repo) stageCheckout(ctx context.Context, idx, base string) error {
	if r.common != "" {
		if err := r.home.mirror(r.common); err != nil {
			return err
		}
	}
	if err := r.refreshExcludes(); err != nil {
		return err
	}
	idLen := r.idLen()
	if ok, err := copyIndex(r.gitDir, idx); err != nil {
		return err
	} else if ok {
		if err := addAll(ctx, r.g, idx, idLen); !errors.Is(err, errLinksUnknown) {
			return err
		}
		os.Remove(idx)
	}
	if base != "" {
		if _, err := r.g.withIndex(idx).run(ctx, nil, "read-tree", base); err != nil {
			return err
		}
	}
	return addAll(ctx, r.g, idx, idLen)
}

// idLen is the length of the repository's object IDs in bytes.
func (r *Repo) idLen() int {
	if r.home.sha256 {
		return 32
	}
	return 20
}

// stagePrivate fills the index of g with every file of a workspace that
// is not a git checkout, ignore rules honoured, up to MaxBytes in all.
func (r *Repo) stagePrivate(ctx context.Context, g git) error {
	m := ignore.NewMatcher(r.root)
	var list bytes.Buffer
	var total int64
	err := filepath.WalkDir(r.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == r.root {
			return nil
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".troupe" || path == r.dataDir) {
			return filepath.SkipDir
		}
		if m.Ignored(path, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !(d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if total += info.Size(); total > r.opts.MaxBytes {
			return fmt.Errorf("%w: more than %d bytes (options.MaxBytes); add .ignore rules or make it a git checkout", ErrTooLarge, r.opts.MaxBytes)
		}
		rel, _ := filepath.Rel(r.root, path)
		list.WriteString(filepath.ToSlash(rel))
		list.WriteByte(0)
		return nil
	})
	if err != nil {
		return err
	}
	_, err = g.run(ctx, list.Bytes(), "update-index", "--add", "-z", "--stdin")
	return err
}

// copyIndex copies the user's index (gitDir/index, read without
// following a symlink) to idx, with the original's modification time:
// git trusts an entry's stat data only when the file was not modified
// in the same second as the index was written (a "racy" entry is
// hashed again), so a copy with a newer time would hide an edit made
// just after the user's index was written. It reports whether there was
// an index to copy.
func copyIndex(gitDir, idx string) (bool, error) {
	d, err := openBeneath(gitDir, "", false)
	if err != nil {
		return false, nil
	}
	defer d.close()
	st, err := d.lstat("index") // before the read: an older time only makes more entries racy
	if err != nil {
		return false, nil
	}
	data, err := d.readFile("index", 0)
	if err != nil || len(data) == 0 {
		return false, nil
	}
	if err := os.WriteFile(idx, data, 0o600); err != nil {
		return false, fmt.Errorf("copy index: %w", err)
	}
	mtime := time.Unix(st.Mtim.Unix())
	if err := os.Chtimes(idx, mtime, mtime); err != nil {
		return false, fmt.Errorf("copy index: %w", err)
	}
	return true, nil
}
