package workspace

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/troupe-ai/troupe/internal/overlay"
)

// Which kind of worktree a Repo makes (Options.Worktrees, the user's
// agent.worktrees), and what the agent's tools need of an overlay one.

// defaultWorktrees is the kind of a Repo whose Options leave Worktrees
// unset ("": a checkout); SetDefaultWorktrees changes it.
var defaultWorktrees atomic.Value // string

// SetDefaultWorktrees sets the kind of worktree a Repo whose Options
// leave Worktrees unset makes (a checkout until it is called): test
// suites force overlays on or off with it from their TestMain. Programs
// pass the user's setting (agent.worktrees) in Options instead.
func SetDefaultWorktrees(kind string) { defaultWorktrees.Store(kind) }

// worktreeKind is the kind of worktree NewWorktree makes: for auto, an
// overlay where the process's holder starts and passes its probe
// (internal/overlay), else a checkout with a note saying why (Worktrees).
func (r *Repo) worktreeKind() (string, error) {
	l := &r.lowers
	l.kindOnce.Do(func() {
		kind := r.opts.Worktrees
		if kind == "" {
			kind, _ = defaultWorktrees.Load().(string)
		}
		switch kind {
		case "", WorktreesCheckout:
			l.kind = WorktreesCheckout
		case WorktreesOverlay:
			l.kind = WorktreesOverlay
		case WorktreesAuto:
			l.kind = WorktreesOverlay
			if _, err := overlay.Shared(r.worktreesDir()); err != nil {
				l.kind = WorktreesCheckout
				l.kindNote = "worktrees are checkouts (agent.worktrees auto): " + err.Error()
			}
		default:
			l.kindErr = fmt.Errorf("worktrees: %q is not auto, overlay or checkout", kind)
		}
	})
	return l.kind, l.kindErr
}

// Worktrees is the kind of worktree NewWorktree makes (WorktreesOverlay
// or WorktreesCheckout), settled now if it was not (for auto the overlay
// probe runs), and, when auto fell back to checkouts, a one-line note
// saying why.
func (r *Repo) Worktrees() (kind, note string, err error) {
	kind, err = r.worktreeKind()
	return kind, r.lowers.kindNote, err
}

// SetWorktrees sets the kind of worktree NewWorktree makes (as
// Options.Worktrees), before the first is made: a store (OpenStore) has
// no Options.
func (r *Repo) SetWorktrees(kind string) { r.opts.Worktrees = kind }

// Inside is Root as the commands that enter the worktree see it (Enter):
// an overlay worktree's mount point joined with the workspace's place in
// its repository; "" for a checkout, whose commands run in Root.
func (w *Worktree) Inside() string {
	if w.ov == nil {
		return ""
	}
	return filepath.Join(w.dir, filepath.FromSlash(strings.TrimSuffix(w.snap.Prefix, "/")))
}

// prewarmLower is Prewarm for overlay worktrees, which are never kept
// idle: the lower tree of snap is checked out in the background, so the
// first overlay worktrees of it only mount. It reports whether this
// Repo's worktrees are overlays.
func (r *Repo) prewarmLower(snap Snapshot) bool {
	if kind, err := r.worktreeKind(); err != nil || kind != WorktreesOverlay {
		return false
	}
	l := &r.lowers
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return true
	}
	if l.warmCtx == nil {
		l.warmCtx, l.stopWarm = context.WithCancel(context.Background())
	}
	l.warming.Add(1)
	go func() {
		defer l.warming.Done()
		ctx, cancel := context.WithTimeout(l.warmCtx, prepareTimeout)
		defer cancel()
		if lt, err := r.lower(ctx, snap); err == nil {
			r.release(lt) // kept until Close
		}
	}()
	return true
}

// stopWarming cancels the lower trees being made ahead and waits for
// them (Close), at most until ctx ends.
func (r *Repo) stopWarming(ctx context.Context) {
	l := &r.lowers
	l.mu.Lock()
	l.closed = true
	if l.stopWarm != nil {
		l.stopWarm()
	}
	l.mu.Unlock()
	done := make(chan struct{})
	go func() { l.warming.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
