package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Housekeeping of a store of snapshots (OpenStore), which a node keeps
// for weeks: every task with a snapshot brings a pack of git objects
// (Unbundle), its capture writes loose ones, and git lfs objects arrive
// in the store's lfs storage (the snapshot's, shipped eagerly; those the
// node's clean made of a worker's files). Nothing else grows: worktrees
// are kept for reuse up to a bound, and the home's records go with
// them, but for the lower trees of overlay worktrees (a checkout of each
// snapshot, kept until released). A StoreKeeper drops the lower trees
// no overlay worktree uses whenever it tidies, and what no worktree
// needs once the store is over its bounds:
//   - git objects: git's own repack (-a -d -l: the objects reachable
//     from any worktree's HEAD or index, its own only, into one pack;
//     the rest dropped) and prune (unreachable loose objects). The
//     node's checkout, whose objects the store borrows, is never
//     written;
//   - git lfs objects: those no registered worktree's snapshot (live or
//     kept for reuse) and no kept patch names, least recently used
//     first, beyond StoreBounds.LFSSpare bytes.
//
// Kept worktrees (kept-*) are whole directories of the agent's files
// that need nothing of the store; kept patches name the git lfs objects
// their files need, which are kept.
//
// Concurrency: every use of the store that reads or writes objects not
// yet reachable from a worktree (a task's fetch up to its worktree's
// checkout; a capture up to its shipping; a worktree parked for reuse
// while it is prepared in the background, whose new registration its
// snapshot's commit is reachable from only once written) holds Use, a shared lock on
// a file in the store's home, which every process sharing the store
// meets (store_lock.go); Tidy runs only when it gets the lock whole at
// once (another user: it does nothing, the next call tries again), and
// a task starting meanwhile waits for it, then finds its snapshot or
// fetches it again.

// StoreBounds are when a StoreKeeper tidies and what it keeps.
type StoreBounds struct {
	Packs    int   // more git packs than this: tidy the git objects
	Loose    int   // more loose git objects than this: tidy them
	GitSpare int64 // git objects grown by more bytes than this since the last tidy: tidy them
	LFSSpare int64 // bytes of git lfs objects kept beyond what worktrees and kept patches need
}

// DefaultStoreBounds are a node's bounds.
var DefaultStoreBounds = StoreBounds{Packs: 16, Loose: 1024, GitSpare: 256 << 20, LFSSpare: 2 << 30}

// StoreUsage is what a store holds.
type StoreUsage struct {
	Packs, Loose int
	GitBytes     int64 // its own git objects (packs and loose), not those it borrows
	LFSObjects   int
	LFSBytes     int64
}

// StoreTidy is what one Tidy did.
type StoreTidy struct {
	Busy          bool // the store was in use: nothing was done
	Git           bool // the git objects were repacked and pruned
	LFS           bool // the git lfs objects were trimmed
	LFSDropped    int
	Before, After StoreUsage
}

// StoreKeeper keeps a store of snapshots within its bounds.
type StoreKeeper struct {
	r     *Repo
	state string // the state directory kept patches are under
	b     StoreBounds

	mu        sync.Mutex // one Tidy at a time in the process
	keptGit   int64      // git bytes after the last tidy
	lfsNeeded int64      // git lfs bytes needed at the last trim
}

// Keeper is the housekeeping of the store r (OpenStore), whose kept
// patches are under stateDir, within b.
func (r *Repo) Keeper(stateDir string, b StoreBounds) *StoreKeeper {
	return &StoreKeeper{r: r, state: stateDir, b: b}
}

// useLock is the file Use and Tidy lock, in the store's home.
func (k *StoreKeeper) useLock() string { return k.r.useLock() }

// useLock is the file a store's uses and tidies lock (store_lock.go).
func (r *Repo) useLock() string { return filepath.Join(r.home.dir, "troupe-store-use.lock") }

// Use marks the store in use until the returned function is called:
// no Tidy runs meanwhile (one running, this process's or another's
// sharing the store, is waited for).
func (k *StoreKeeper) Use() (func(), error) { return k.r.use() }

// use is Use for the Repo's own work that a tidy must not run under.
func (r *Repo) use() (func(), error) {
	release, err := storeLockAt(r.useLock()).share(r.useLock())
	if err != nil {
		return nil, fmt.Errorf("use the snapshot store: %w", err)
	}
	return release, nil
}

// waitPrepared waits for the worktrees kept for reuse that are being
// prepared in the background (or ctx's end), and reports whether there
// were any.
func (r *Repo) waitPrepared(ctx context.Context) bool {
	r.idleMu.Lock()
	var pending []chan struct{}
	for _, w := range r.idle {
		select {
		case <-w.ready:
		default:
			pending = append(pending, w.ready)
		}
	}
	r.idleMu.Unlock()
	for _, c := range pending {
		select {
		case <-c:
		case <-ctx.Done():
			return false
		}
	}
	return len(pending) > 0
}

// preparing marks the store in use while a worktree parked for reuse
// (or made ahead) is prepared in the background: it registers a new
// snapshot's commit (an overlay's remount does so under a new name), and
// a tidy's repack in between would reach it from no worktree and drop
// it. A mark that cannot be made (its lock file cannot be opened) lets
// no tidy run either.
func (r *Repo) preparing() func() {
	release, err := r.use()
	if err != nil {
		return func() {}
	}
	return release
}

// Tidy drops what no worktree and no kept patch needs when the store is
// over its bounds (force: whatever its size). It does nothing, Busy,
// when the store is in use.
func (k *StoreKeeper) Tidy(ctx context.Context, force bool) (StoreTidy, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	release, ok, err := storeLockAt(k.useLock()).try(k.useLock())
	if err == nil && !ok && k.r.waitPrepared(ctx) {
		// A worktree the task just ended parked is being prepared (it
		// holds the store in use for that while): once it is, again.
		release, ok, err = storeLockAt(k.useLock()).try(k.useLock())
	}
	if err != nil {
		return StoreTidy{}, fmt.Errorf("tidy the snapshot store: %w", err)
	}
	if !ok {
		return StoreTidy{Busy: true}, nil
	}
	defer release()
	var t StoreTidy
	// An overlay worktree's lower tree (a checkout of its snapshot, its
	// own worktree) stays after the last overlay on it until released:
	// those no overlay worktree uses go first (a worktree kept for reuse
	// keeps its own), their snapshots with them.
	if err := k.r.closeLowers(ctx); err != nil {
		return t, fmt.Errorf("tidy the snapshot store: %w", err)
	}
	if t.Before, err = k.Usage(); err != nil {
		return t, err
	}
	t.After = t.Before
	b := k.b
	lfs := force || t.Before.LFSBytes > k.lfsNeeded+b.LFSSpare
	// The git objects go first, and whenever git lfs objects go: a
	// snapshot commit the store keeps is one a worktree holds, whose git
	// lfs objects are kept, so a task that finds its snapshot's commit
	// finds its git lfs objects too (one that does not fetches both).
	if lfs || force || t.Before.Packs > b.Packs || t.Before.Loose > b.Loose || t.Before.GitBytes > k.keptGit+b.GitSpare {
		if err := k.tidyGit(ctx); err != nil {
			return t, err
		}
		t.Git = true
	}
	if lfs {
		n, needed, err := k.trimLFS(ctx)
		if err != nil {
			return t, err
		}
		t.LFS, t.LFSDropped, k.lfsNeeded = true, n, needed
	}
	if t.After, err = k.Usage(); err != nil {
		return t, err
	}
	k.keptGit = t.After.GitBytes
	return t, nil
}

// tidyGit repacks the store's own objects reachable from its worktrees
// (their HEADs and indexes: git's own reachability, as gc has it) into
// one pack and drops the rest: packs of snapshots no worktree holds,
// the loose objects of captures that were shipped.
func (k *StoreKeeper) tidyGit(ctx context.Context) error {
	g := k.r.home.git()
	// An agent's own git in its worktree writes into the home's objects:
	// what it made is seen, so what it reaches is kept.
	g.borrow = append(append([]string(nil), g.borrow...), filepath.Join(k.r.home.dir, "objects"))
	g.conf = append(g.conf, "-c", "gc.writeCommitGraph=false", "-c", "repack.writeBitmaps=false")
	if _, err := g.run(ctx, nil, "repack", "-a", "-d", "-l", "-q"); err != nil {
		return fmt.Errorf("tidy the snapshot store: %w", err)
	}
	if _, err := g.run(ctx, nil, "prune", "--expire=now"); err != nil {
		return fmt.Errorf("tidy the snapshot store: %w", err)
	}
	return nil
}

// Usage measures the store: its own git objects and its git lfs
// storage.
func (k *StoreKeeper) Usage() (StoreUsage, error) {
	var u StoreUsage
	objects := k.r.home.objects
	packs, err := os.ReadDir(filepath.Join(objects, "pack"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return u, fmt.Errorf("measure the snapshot store: %w", err)
	}
	for _, e := range packs {
		if fi, err := e.Info(); err == nil && e.Type().IsRegular() {
			u.GitBytes += fi.Size()
			if strings.HasSuffix(e.Name(), ".pack") {
				u.Packs++
			}
		}
	}
	err = walkFanout(objects, 1, func(_ string, fi os.FileInfo) {
		u.Loose++
		u.GitBytes += fi.Size()
	})
	if err != nil {
		return u, fmt.Errorf("measure the snapshot store: %w", err)
	}
	err = walkFanout(filepath.Join(k.r.lfsDir(), "objects"), 2, func(_ string, fi os.FileInfo) {
		u.LFSObjects++
		u.LFSBytes += fi.Size()
	})
	if err != nil {
		return u, fmt.Errorf("measure the snapshot store: %w", err)
	}
	return u, nil
}

// walkFanout calls fn for each regular file depth levels of two-hex
// directories below dir (git's loose objects: 1; git lfs's: 2), its path
// and info; a missing dir holds none.
func walkFanout(dir string, depth int, fn func(path string, fi os.FileInfo)) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case depth > 0 && e.IsDir() && len(e.Name()) == 2 && isHex(e.Name()):
			if err := walkFanout(p, depth-1, fn); err != nil {
				return err
			}
		case depth == 0 && e.Type().IsRegular():
			if fi, err := e.Info(); err == nil {
				fn(p, fi)
			}
		}
	}
	return nil
}
