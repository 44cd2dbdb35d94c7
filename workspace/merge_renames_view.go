package workspace

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// userView is the rename route's view of the user's side (see
// merge_renames.go): an index of the work tree kept in the home from one
// land to the next, so a land that needs the work tree's tree brings
// that index up to date (git add -A, which reads again only the files
// whose stat changed since the previous land: the ones landed, the ones
// the user edited) and writes its tree, instead of snapshotting the
// workspace afresh each time (copying the user's index, rereading every
// file it holds stale, a commit, the refs). It is seeded from the
// user's index as a snapshot is, and seeded again whenever that index
// changes (the user staged, committed or switched branches) so what is
// tracked is what the user tracks. Its fields are guarded by the apply
// lock.
type userView struct {
	index string           // its index file in the home's tmp directory ("": none yet)
	from  userIndexVersion // the user's index it was seeded from
}

// userIndexVersion identifies a version of the user's index file.
type userIndexVersion struct {
	size  int64
	mtime time.Time
	ino   uint64
}

// userTree is the tree of the work tree as it is now, in git's clean
// form, ignore rules honoured: a snapshot's tree, taken through the
// user view (a workspace that is no git checkout is snapshotted).
func (r *Repo) userTree(ctx context.Context) (string, error) {
	if r.private {
		now, err := r.Snapshot(ctx)
		return now.Tree, err
	}
	v := &r.view
	cur := userIndexStat(r.gitDir)
	if v.index == "" || cur != v.from {
		if err := r.seedView(ctx, cur); err != nil {
			return "", err
		}
	} else {
		if r.common != "" {
			if err := r.home.mirror(r.common); err != nil {
				return "", err
			}
		}
		if err := r.refreshExcludes(); err != nil {
			return "", err
		}
		if err := addAll(ctx, r.g, v.index, r.idLen()); err != nil {
			v.drop()
			return "", fmt.Errorf("the work tree's tree: %w", err)
		}
	}
	tree, err := r.g.withIndex(v.index).line(ctx, "write-tree")
	if err != nil {
		v.drop()
		return "", fmt.Errorf("the work tree's tree: %w", err)
	}
	return tree, nil
}

// seedView makes the view's index afresh, as a snapshot stages the
// work tree (stageCheckout), from the user's index whose stat is cur.
func (r *Repo) seedView(ctx context.Context, cur userIndexVersion) error {
	v := &r.view
	v.drop()
	f, err := os.CreateTemp(r.home.tmpDir(), r.home.tmpName("view"))
	if err != nil {
		return fmt.Errorf("the work tree's tree: %w", err)
	}
	idx := f.Name()
	f.Close()
	os.Remove(idx) // git wants to create it
	base, _ := r.refs.line(ctx, "rev-parse", "-q", "--verify", "HEAD^{commit}")
	if err := r.stageCheckout(ctx, idx, base); err != nil {
		os.Remove(idx)
		return fmt.Errorf("the work tree's tree: %w", err)
	}
	v.index, v.from = idx, cur
	return nil
}

// drop removes the view's index: the next land seeds it again.
func (v *userView) drop() {
	if v.index != "" {
		os.Remove(v.index)
		os.Remove(v.index + ".lock")
	}
	*v = userView{}
}

// userIndexStat is the stat of the user's index in gitDir (zero when
// there is none to read).
func userIndexStat(gitDir string) userIndexVersion {
	d, err := openBeneath(gitDir, "", false)
	if err != nil {
		return userIndexVersion{}
	}
	defer d.close()
	st, err := d.lstat("index")
	if err != nil {
		return userIndexVersion{}
	}
	return versionOf(&st)
}

// versionOf is what identifies a file's version in st.
func versionOf(st *unix.Stat_t) userIndexVersion {
	return userIndexVersion{size: st.Size, mtime: time.Unix(st.Mtim.Unix()), ino: st.Ino}
}
