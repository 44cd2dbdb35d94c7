package workspace

import (
	"context"
	"errors"
	"fmt"
)

// takeIdle returns an idle worktree reset to snap, or nil when none is
// kept. A worktree that cannot be reset is removed.
func (r *Repo) takeIdle(ctx context.Context, snap Snapshot) *Worktree {
	for {
		r.idleMu.Lock()
		n := len(r.idle)
		if n == 0 {
			r.idleMu.Unlock()
			return nil
		}
		w := r.idle[n-1]
		r.idle = r.idle[:n-1]
		r.idleMu.Unlock()
		if err := w.reset(ctx, snap); err != nil {
			_ = w.destroy(context.WithoutCancel(ctx))
			continue
		}
		return w
	}
}

// reset makes the worktree hold snap exactly: tracked files rewritten
// where they differ, and every other file (ignored ones too) deleted.
// Files that did not change keep their stat data, so the next capture
// reads none of them.
func (w *Worktree) reset(ctx context.Context, snap Snapshot) error {
	if _, err := w.g.run(ctx, nil, "reset", "-q", "--hard", snap.Commit); err != nil {
		return fmt.Errorf("reuse worktree: %w", err)
	}
	if _, err := w.g.run(ctx, nil, "clean", "-q", "-ffdx"); err != nil {
		return fmt.Errorf("reuse worktree: %w", err)
	}
	w.snap = snap
	return nil
}

// park keeps w for reuse when fewer than Options.KeepIdle are kept, and
// reports whether it did.
func (r *Repo) park(w *Worktree) bool {
	r.idleMu.Lock()
	defer r.idleMu.Unlock()
	if len(r.idle) >= r.opts.KeepIdle {
		return false
	}
	r.idle = append(r.idle, w)
	return true
}

// Close removes the idle worktrees kept for reuse. Worktrees in use are
// not touched; the Repo may still be used.
func (r *Repo) Close(ctx context.Context) error {
	r.idleMu.Lock()
	idle := r.idle
	r.idle = nil
	r.idleMu.Unlock()
	var errs []error
	for _, w := range idle {
		errs = append(errs, w.destroy(ctx))
	}
	return errors.Join(errs...)
}
