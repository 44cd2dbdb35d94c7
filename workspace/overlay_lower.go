package workspace

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// The lower trees of a Repo's overlay worktrees: one per snapshot tree,
// made by the first worktree (or Prewarm) that needs it and shared by
// every overlay worktree of that tree. Where its checkout depends on
// nothing but the tree and the repository's configuration (no filter of
// the user's), it is kept in the home across runs and processes
// (lower_cache.go); else it is checked out for this Repo under the data
// directory and removed when the Repo closes.

// lowerTree is a snapshot's tree checked out once, shared read-only.
type lowerTree struct {
	ready chan struct{}
	err   error
	users int // overlay worktrees mounted on it (guarded by lowers.mu)

	tree      string     // the snapshot tree it holds
	root, rel string     // its directory, rel below root (the overlay's lower)
	index     string     // its index file, which each overlay worktree copies
	filtered  *converter // the user's filters it was checked out through
	w         *Worktree  // this Repo's own checkout, removed at Close (else nil)
	cached    *os.File   // a cached lower: held (shared lock) while this Repo uses it
	hand      lowerHand  // the manifest of its index, read once (overlay_manifest.go)
}

// lowers are a Repo's lower trees, by snapshot tree, and the kind of
// its worktrees, settled on first use.
type lowers struct {
	mu sync.Mutex
	m  map[string]*lowerTree

	// Lower trees made ahead (prewarmLower): Close cancels them and
	// waits, so none is left behind a closed Repo.
	warming  sync.WaitGroup
	stopWarm context.CancelFunc
	warmCtx  context.Context
	closed   bool

	kindOnce sync.Once
	kind     string
	kindErr  error
	kindNote string
}

// lower is the lower tree of snap, made by the first caller.
func (r *Repo) lower(ctx context.Context, snap Snapshot) (*lowerTree, error) {
	r.lowers.mu.Lock()
	if r.lowers.m == nil {
		r.lowers.m = map[string]*lowerTree{}
	}
	l, ok := r.lowers.m[snap.Tree]
	if !ok {
		l = &lowerTree{ready: make(chan struct{}), tree: snap.Tree}
		r.lowers.m[snap.Tree] = l
	}
	l.users++
	r.lowers.mu.Unlock()
	if !ok {
		l.err = r.makeLower(ctx, snap, l)
		if l.err != nil {
			r.lowers.mu.Lock()
			delete(r.lowers.m, snap.Tree) // the next caller tries again
			r.lowers.mu.Unlock()
		}
		close(l.ready)
	}
	select {
	case <-l.ready:
	case <-ctx.Done():
		r.release(l)
		return nil, ctx.Err()
	}
	if l.err != nil {
		return nil, l.err
	}
	return l, nil
}

// makeLower fills l: the cached lower of snap's tree where there may be
// one, else a checkout of snap of this Repo's own.
func (r *Repo) makeLower(ctx context.Context, snap Snapshot, l *lowerTree) error {
	if key, ok := r.lowerKey(ctx, snap.Tree); ok && r.protectLowers() == nil {
		return r.cachedLower(ctx, snap, key, l)
	}
	w, err := r.create(ctx, snap, "lower-"+snap.Tree[:min(12, len(snap.Tree))]+"-"+strconv.FormatUint(rand.Uint64()&0xffffff, 16))
	if err != nil {
		return err
	}
	// Checked out through the user's filters once, for every overlay
	// worktree on it (checkout_filters.go).
	if err := w.smudgeFiltered(ctx); err != nil {
		_ = w.destroy(context.WithoutCancel(ctx))
		return err
	}
	l.w, l.filtered = w, w.filtered
	l.root, l.rel = r.dataBase, filepath.Join(r.worktreesRel(), w.name)
	l.index = filepath.Join(w.admin, "index")
	return nil
}

// release ends a user's hold on the lower tree l.
func (r *Repo) release(l *lowerTree) {
	r.lowers.mu.Lock()
	l.users--
	r.lowers.mu.Unlock()
}

// closeLowers removes the lower trees of this Repo's own no overlay
// worktree uses, and lets go of the cached ones (Close).
func (r *Repo) closeLowers(ctx context.Context) error {
	r.lowers.mu.Lock()
	var gone []*lowerTree
	for t, l := range r.lowers.m {
		select {
		case <-l.ready:
		default:
			continue // still being made: its maker holds it
		}
		if l.users == 0 {
			delete(r.lowers.m, t)
			gone = append(gone, l)
		}
	}
	r.lowers.mu.Unlock()
	var errs []error
	for _, l := range gone {
		if l.w != nil {
			errs = append(errs, l.w.destroy(ctx))
		}
		if l.cached != nil {
			errs = append(errs, l.cached.Close())
		}
	}
	return errors.Join(errs...)
}

// dir is the lower tree's directory.
func (l *lowerTree) dir() string { return filepath.Join(l.root, l.rel) }
