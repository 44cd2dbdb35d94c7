package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/troupe-ai/troupe/internal/overlay"
)

// An overlay worktree (Options.Worktrees) costs what its agent touches,
// not the repository's size: the snapshot's tree is checked out once
// (the lower tree, shared by every overlay worktree of that tree, and
// kept in the home for the next runs where it may be: overlay_lower.go,
// lower_cache.go), and each agent's worktree is
// an overlay mount of it with an empty upper and work directory of its
// own, in the namespace of the process's holder (internal/overlay),
// mounted by descriptor beneath the data directory's base (a symlink
// swapped into the path is refused). The mount point is an empty
// directory outside that namespace: troupe's file operations reach the
// merged view through the mount's root directory the holder sends back
// (the worktree's descriptor), Root through /proc/<holder>/root, and git
// commands in the worktree run inside the namespace (nsenter): troupe's
// in the view's descriptor, the agent's at the mount point. Kept for
// reuse, an overlay worktree is unmounted, emptied and mounted again
// (overlay_reuse.go). Its git directory is its own, in the home, with a
// copy of the lower tree's index (the stat data of lower files are the
// same through the mount); its .git file is written in the upper
// directory. Captures read the merged view as they read a checkout.

// Worktree kinds (Options.Worktrees).
const (
	WorktreesAuto     = "auto"     // overlay where the probe passes, else checkout
	WorktreesOverlay  = "overlay"  // overlay, or an error where it cannot be had
	WorktreesCheckout = "checkout" // every worktree a full checkout
)

// overlayWorker is what an overlay worktree adds to a Worktree.
type overlayWorker struct {
	h     *overlay.Holder
	lower *lowerTree
	side  string // <worktrees>/<name>.ovl: its upper and work directories
	view  string // the mount point's merged view, from this process
}

// createOverlay makes the overlay worktree named name of snap.
func (r *Repo) createOverlay(ctx context.Context, snap Snapshot, name string) (*Worktree, error) {
	h, err := overlay.Shared(r.worktreesDir())
	if err != nil {
		return nil, err
	}
	l, err := r.lower(ctx, snap)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			r.release(l)
		}
	}()
	base := strconv.Itoa(os.Getpid()) + "-" + name
	parent, err := openBeneath(r.dataBase, r.worktreesRel(), true)
	if err != nil {
		return nil, err
	}
	defer parent.close()
	for _, d := range []string{base, base + ".ovl", base + ".ovl/up", base + ".ovl/work"} {
		if err := unix.Mkdirat(parent.fd(), d, 0o755); err != nil {
			return nil, &fs.PathError{Op: "mkdir", Path: filepath.Join(r.worktreesDir(), d), Err: err}
		}
	}
	ov := &overlayWorker{h: h, lower: l, side: filepath.Join(r.worktreesDir(), base+".ovl")}
	w := &Worktree{repo: r, dir: filepath.Join(r.worktreesDir(), base), name: base, snap: snap, ov: ov}
	ok = true // w holds l now: its destroy releases it
	ov.view = h.View(w.dir)
	if err := w.mountOverlay(ctx); err != nil {
		_ = w.destroy(context.WithoutCancel(ctx))
		return nil, err
	}
	return w, nil
}

// mountOverlay registers w's git directory (the lower tree's index
// copied), writes its .git file in the upper directory, mounts it and
// opens its merged view.
func (w *Worktree) mountOverlay(ctx context.Context) error {
	ov, r := w.ov, w.repo
	var err error
	if w.admin, err = r.register(w.dir, w.snap.Commit, false); err != nil {
		return err
	}
	if err := copyLowerIndex(ov.lower.index, filepath.Join(w.admin, "index")); err != nil {
		return err
	}
	up, err := openBeneath(r.dataBase, filepath.Join(r.worktreesRel(), w.name+".ovl", "up"), false)
	if err != nil {
		return err
	}
	err = up.writeNew(".git", 0o644, []byte("gitdir: "+w.admin+"\n"))
	up.close()
	if err != nil {
		return err
	}
	rel := r.worktreesRel()
	f, err := ov.h.MountFrom(ov.lower.root, ov.lower.rel, r.dataBase, filepath.Join(rel, w.name+".ovl", "up"),
		filepath.Join(rel, w.name+".ovl", "work"), filepath.Join(rel, w.name))
	if err != nil {
		return err
	}
	w.fd = &dirFD{f: f}
	w.at = anchorPath(w.fd, ov.view)
	// troupe's git starts in the view through its descriptor and enters
	// the holder's namespaces staying there: no path of the worktree is
	// looked up again, wherever its mount point's path leads now.
	enter, err := ov.h.EnterHere()
	if err != nil {
		return err
	}
	w.g = r.worktreeGit(w.admin, w.at, w.dir)
	w.g.enter = enter
	return ctx.Err()
}

// copyLowerIndex copies the index file from to to, keeping its modification
// time (git's racy-entry rule compares entries with it).
func copyLowerIndex(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Close(); err != nil {
		return err
	}
	return os.Chtimes(to, fi.ModTime(), fi.ModTime())
}

// destroyOverlay unmounts w and removes its upper and work directories
// and mount point (its git directory is destroy's).
func (w *Worktree) destroyOverlay() error {
	var errs []error
	if w.fd != nil {
		// Unmounted through its descriptor: the mount it is, wherever
		// its mount point's path leads now.
		if err := w.ov.h.Unmount(w.fd.f); err != nil {
			errs = append(errs, err)
		}
		w.fd.close()
		w.fd = nil
	}
	parent, err := openBeneath(w.repo.dataBase, w.repo.worktreesRel(), false)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	defer parent.close()
	if side, err := parent.sub(w.name+".ovl", false); err == nil {
		errs = append(errs, overlay.UnlockWork(side.fd(), "work")) // else a user other than root cannot remove it
		side.close()
	}
	errs = append(errs, parent.removeAll(w.name+".ovl"), parent.removeAll(w.name))
	if w.ov.lower != nil {
		w.repo.release(w.ov.lower)
		w.ov.lower = nil
	}
	return errors.Join(errs...)
}

// keepOverlay keeps an overlay worktree as Keep does: its merged view
// copied into a real directory (kept-<name>-<n>, without its .git file),
// which outlives the holder, and the overlay removed.
func (w *Worktree) keepOverlay(ctx context.Context) (string, error) {
	name := keptPrefix + w.name + "-" + strconv.FormatUint(rand.Uint64()&0xffffff, 16)
	dest := filepath.Join(w.repo.worktreesDir(), name)
	parent, err := openBeneath(w.repo.dataBase, w.repo.worktreesRel(), false)
	if err != nil {
		return "", fmt.Errorf("keep worktree: %w", err)
	}
	defer parent.close()
	if err := unix.Mkdirat(parent.fd(), name, 0o755); err != nil {
		return "", &fs.PathError{Op: "keep worktree", Path: dest, Err: err}
	}
	// cp -a copies symlinks as symlinks and follows none; it reads the
	// view through the worktree's descriptor and writes into the new
	// directory through its descriptor, both passed to it.
	to, err := parent.sub(name, false)
	if err != nil {
		return "", err
	}
	defer to.close()
	cmd := exec.CommandContext(ctx, "cp", "-a", "/proc/self/fd/4/.", "/proc/self/fd/3/")
	cmd.ExtraFiles = []*os.File{to.f, w.fd.f}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("keep worktree: copy its files: %w: %s", err, out)
	}
	_ = to.remove(".git")
	errs := []error{w.destroyOverlay()}
	if w.admin != "" {
		errs = append(errs, removeAtomically(w.admin, w.repo.home.tmpDir()))
	}
	if err := errors.Join(errs...); err != nil {
		return dest, fmt.Errorf("keep worktree: %w", err)
	}
	return dest, nil
}

// Enter is how a command enters the worktree: the argv prefix that
// starts a program (appended to it) inside an overlay worktree's
// namespace at dir (a directory below Root, "" for Root), or nil for a
// checkout, whose commands start in Root as they are.
func (w *Worktree) Enter(dir string) []string {
	if w.ov == nil {
		return nil
	}
	at := w.dir
	if p := strings.TrimSuffix(w.snap.Prefix, "/"); p != "" {
		at = filepath.Join(at, filepath.FromSlash(p))
	}
	if dir != "" {
		at = filepath.Join(at, dir)
	}
	pre, err := w.ov.h.Enter(at)
	if err != nil {
		return []string{"/bin/false"} // nsenter went missing since the probe
	}
	return pre
}
