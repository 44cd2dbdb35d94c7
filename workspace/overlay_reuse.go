package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"

	"github.com/troupe-ai/troupe/internal/overlay"
)

// An overlay worktree kept for reuse (Options.KeepIdle) is made fresh
// again rather than restored file by file: unmounted, its upper and work
// directories emptied, its git directory made anew and the overlay
// mounted again on the lower tree of the snapshot asked for (recycle).
// That costs what a new overlay worktree costs, whatever its agent did
// (its edits, its git commands, files it made ignored), and leaves
// nothing of it: the agent's changes were only ever in the upper
// directory.

// recycle makes the overlay worktree w hold snap as a new one would:
// its mount, upper and work directories and git directory made again.
// On error w holds nothing (its tree unknown) and is to be destroyed.
func (w *Worktree) recycle(ctx context.Context, snap Snapshot) error {
	r, ov := w.repo, w.ov
	w.tree = ""
	var errs []error
	if w.fd != nil {
		errs = append(errs, ov.h.Unmount(w.fd.f))
		w.fd.close()
		w.fd = nil
	}
	if w.admin != "" {
		errs = append(errs, removeAtomically(w.admin, r.home.tmpDir()))
		w.admin = ""
	}
	errs = append(errs, w.emptySide())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("reuse overlay worktree: %w", err)
	}
	if ov.lower == nil || ov.lower.tree != snap.Tree {
		l, err := r.lower(ctx, snap)
		if err != nil {
			return fmt.Errorf("reuse overlay worktree: %w", err)
		}
		if ov.lower != nil {
			r.release(ov.lower)
		}
		ov.lower = l
	}
	w.snap = snap
	if err := w.mountOverlay(ctx); err != nil {
		return fmt.Errorf("reuse overlay worktree: %w", err)
	}
	w.tree, w.stray = snap.Tree, false
	return nil
}

// emptySide replaces w's upper and work directories with empty ones,
// following no symlink on the way.
func (w *Worktree) emptySide() error {
	side, err := openBeneath(w.repo.dataBase, w.repo.worktreesRel(), false)
	if err == nil {
		defer side.close()
		side, err = side.sub(w.name+".ovl", false)
	}
	if err != nil {
		return err
	}
	defer side.close()
	if err := overlay.UnlockWork(side.fd(), "work"); err != nil {
		return err
	}
	for _, d := range []string{"up", "work"} {
		if err := side.removeAll(d); err != nil {
			return err
		}
		if err := unix.Mkdirat(side.fd(), d, 0o755); err != nil {
			return &fs.PathError{Op: "mkdir", Path: d, Err: err}
		}
	}
	return nil
}

// parkOverlay prepares the parked overlay worktree w for target in the
// background (park).
func (w *Worktree) parkOverlay(target Snapshot, prepared func()) {
	go func() {
		defer close(w.ready)
		defer prepared()
		ctx, cancel := context.WithTimeout(context.Background(), prepareTimeout)
		defer cancel()
		w.prepared = "remount"
		w.err = w.recycle(ctx, target)
	}()
}
