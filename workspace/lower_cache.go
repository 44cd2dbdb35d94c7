package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/troupe-ai/troupe/internal/overlay"
)

// Lower trees kept across runs. A lower tree whose checkout depends on
// nothing but its snapshot's tree and the repository's configuration
// (lowerKey) is kept in the home, lowers/<key>/ (tree/, the files, and
// index, its index with their stat data), where no agent may write, and
// the next Repo of any process on that tree mounts it without checking
// anything out. It is made under a temporary name in the home's tmp and
// renamed into lowers/ whole: a half-made one is never seen, and one a
// killed process left in tmp is pruned with its other leftovers
// (Prune). Two processes making the same one both make it; the second
// rename fails and that process uses the first's. Each Repo holds a
// shared lock (flock) on the lowers it uses; trimming (trimLowers)
// removes only a lower whose exclusive lock it gets, so a lower mounted
// by a live process is never removed under it. Workers never write it:
// an overlay copies a file up before anything of it changes (contents,
// mode, owner, times, a hard link made to it), and the lowers directory
// is read-only in the holder's namespace, where their commands run
// (protectLowers), so the lower stays as it was checked out.

// Cached lowers kept: at most maxCachedLowers not in use, none unused
// for longer than maxLowerAge.
const (
	maxCachedLowers = 4
	maxLowerAge     = 7 * 24 * time.Hour
)

// lowerKey names the cached lower of tree: a hash of the tree and of all
// that decides how it is checked out (the repository's configuration as
// our git sees it, the user's line-ending settings, info/attributes);
// ok is false where no lower of it is cached: the user's filters (their
// commands may write anything), a repository feature troupe does not
// model, or configuration it cannot read.
func (r *Repo) lowerKey(ctx context.Context, tree string) (string, bool) {
	if len(r.conv.filters) > 0 || r.unmodelled != "" || tree == "" {
		return "", false
	}
	conf, why := r.repoConfig(ctx)
	if why != "" {
		return "", false
	}
	attrs, err := os.ReadFile(filepath.Join(r.home.dir, "info", "attributes"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	h := sha256.New()
	fmt.Fprintf(h, "troupe lower 1\x00%s\x00", tree)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range conf {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(h, "%s=%t:%s\x00", k, conf[k].set, conf[k].val)
	}
	fmt.Fprintf(h, "%q\x00%d:", r.conv.conf, len(attrs))
	h.Write(attrs)
	return hex.EncodeToString(h.Sum(nil))[:32], true
}

// lowersDir is where the home keeps lower trees.
func (r *Repo) lowersDir() string { return filepath.Join(r.home.dir, "lowers") }

// protectLowers makes the home's lowers directory read-only in the
// namespace of the process's holder, which every command entering an
// overlay worktree joins: neither an agent's command nor git run there
// can write a cached lower through its path (say, a symbolic link to
// it); an error says it could not be, and no lower is cached then.
func (r *Repo) protectLowers() error {
	if err := os.MkdirAll(r.lowersDir(), 0o700); err != nil {
		return err
	}
	h, err := overlay.Shared(r.worktreesDir())
	if err != nil {
		return err
	}
	return h.ReadOnly(r.home.dir, "lowers")
}

// cachedLower fills l with the cached lower key of snap's tree, made now
// when there is none, and holds it for this Repo.
func (r *Repo) cachedLower(ctx context.Context, snap Snapshot, key string, l *lowerTree) error {
	for range 3 {
		f, err := openLower(r.lowersDir(), key)
		if err == nil {
			l.cached = f
			l.root, l.rel = r.home.dir, filepath.Join("lowers", key, "tree")
			l.index = filepath.Join(r.lowersDir(), key, "index")
			now := time.Now()
			_ = os.Chtimes(filepath.Join(r.lowersDir(), key), now, now) // used now (trimLowers)
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		err = r.buildLower(ctx, snap, key)
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("lower tree %s: removed as often as it was made", key)
}

// openLower opens the cached lower key in dir and takes a shared lock on
// it; fs.ErrNotExist when there is none (or it was being removed).
func openLower(dir, key string) (*os.File, error) {
	p := filepath.Join(dir, key)
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		f.Close()
		return nil, err
	}
	// Trimming renames a lower away before removing it, holding its
	// exclusive lock: the one locked must still be the one named key.
	held, err1 := f.Stat()
	now, err2 := os.Lstat(p)
	if err1 != nil || err2 != nil || !os.SameFile(held, now) {
		f.Close()
		return nil, fs.ErrNotExist
	}
	return f, nil
}

// buildLower checks snap out as the cached lower key: in a directory of
// the home's tmp, renamed into lowers/ once whole.
func (r *Repo) buildLower(ctx context.Context, snap Snapshot, key string) error {
	staging, err := os.MkdirTemp(r.home.tmpDir(), r.home.tmpName("lower"))
	if err != nil {
		return err
	}
	defer os.RemoveAll(staging) // gone when renamed
	name := strconv.Itoa(os.Getpid()) + "-lower"
	parent, err := openBeneath(staging, ".", false)
	if err != nil {
		return err
	}
	defer parent.close()
	if err := unix.Mkdirat(parent.fd(), name, 0o755); err != nil {
		return &fs.PathError{Op: "mkdir", Path: filepath.Join(staging, name), Err: err}
	}
	fd, err := parent.sub(name, false)
	if err != nil {
		return err
	}
	w := &Worktree{repo: r, dir: filepath.Join(staging, name), name: name, snap: snap, fd: fd,
		linkFrom: r.nearestLower(key, len(snap.Tree)/2)}
	err = w.populate(ctx)
	w.linkFrom.close()
	if err == nil {
		err = copyLowerIndex(filepath.Join(w.admin, "index"), filepath.Join(staging, "index"))
	}
	if err == nil && w.raw {
		err = os.WriteFile(filepath.Join(staging, lowerRawMark), nil, 0o644)
	}
	if err == nil {
		err = fd.remove(".git") // each worktree's upper has its own
	}
	fd.close()
	if w.admin != "" {
		err = errors.Join(err, removeAtomically(w.admin, r.home.tmpDir()))
	}
	if err == nil {
		err = os.Rename(filepath.Join(staging, name), filepath.Join(staging, "tree"))
	}
	if err != nil {
		return fmt.Errorf("lower tree: %w", err)
	}
	err = os.Rename(staging, filepath.Join(r.lowersDir(), key))
	if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY) {
		return nil // another process made it first: that one is used
	}
	if err != nil {
		return fmt.Errorf("lower tree: %w", err)
	}
	r.trimLowers(key)
	return nil
}

// trimLowers removes the cached lowers beyond the newest maxCachedLowers
// and those unused for maxLowerAge, except keep and any a Repo holds.
func (r *Repo) trimLowers(keep string) {
	entries, err := os.ReadDir(r.lowersDir())
	if err != nil {
		return
	}
	type aged struct {
		name string
		at   time.Time
	}
	var all []aged
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && e.Name() != keep {
			all = append(all, aged{e.Name(), fi.ModTime()})
		}
	}
	slices.SortFunc(all, func(a, b aged) int { return b.at.Compare(a.at) })
	for i, a := range all {
		if i+1 >= maxCachedLowers || time.Since(a.at) > maxLowerAge {
			r.dropLower(a.name)
		}
	}
}

// dropLower removes the cached lower name unless a Repo holds it.
func (r *Repo) dropLower(name string) {
	if strings.HasPrefix(name, ".") {
		return
	}
	p := filepath.Join(r.lowersDir(), name)
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return // in use
	}
	_ = removeAtomically(p, r.home.tmpDir())
}
