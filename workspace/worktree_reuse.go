package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// A Repo keeps up to Options.KeepIdle removed worktrees, still checked
// out, for the next NewWorktree: a worktree written file by file costs
// a write per file of the tree, where a kept one rewrites only the
// files that differ. A kept worktree is prepared in the background as
// soon as it is parked: the files its agent created (ignored ones too)
// deleted and its tracked files brought to the latest snapshot, touching
// only the paths that differ from the tree its last capture wrote, which
// its index holds (switchFiles). NewWorktree then has at most the
// difference to the snapshot it asks for to write. A worktree handed
// over with a manifest (manifest.go) is first restored in Go to what it
// held then (worktree_restore.go): its agent's new files removed and
// the tracked files it changed rewritten, found by one lstat walk, no
// git process. A worktree removed without a capture and without a
// manifest, one whose agent moved HEAD or changed the index, or whose
// switch fails, is reset the slow way (git reset --hard and clean
// -ffdx: every tracked file checked).

// prepareTimeout bounds one background preparation.
const prepareTimeout = 5 * time.Minute

// takeIdle returns an idle worktree holding snap, or nil when none is
// kept. One whose preparation failed or that cannot be brought to snap
// is removed.
func (r *Repo) takeIdle(ctx context.Context, snap Snapshot) *Worktree {
	for {
		w := r.pickIdle(snap)
		if w == nil {
			return nil
		}
		select {
		case <-w.ready:
		case <-ctx.Done():
			r.unpick(w)
			return nil
		}
		err := w.err
		if err == nil && !w.intact() {
			err = errMoved
		}
		if err == nil {
			err = w.bring(ctx, snap)
		}
		if err == nil {
			err = w.markParked(false) // it holds snap, HEAD and all: an agent's from here
		}
		if err != nil {
			if w.dir != "" {
				_ = w.destroy(context.WithoutCancel(ctx))
			}
			continue
		}
		w.tree, w.removed = "", false // the agent may change anything until its capture
		return w
	}
}

// pickIdle takes an idle worktree out of the pool: a prepared one
// holding snap's tree first, then any prepared one, then one still
// being prepared.
func (r *Repo) pickIdle(snap Snapshot) *Worktree {
	r.idleMu.Lock()
	defer r.idleMu.Unlock()
	best := -1
	rank := func(w *Worktree) int {
		select {
		case <-w.ready:
			if w.err == nil && w.tree == snap.Tree {
				return 2
			}
			return 1
		default:
			return 0
		}
	}
	for i, w := range r.idle {
		if best < 0 || rank(w) > rank(r.idle[best]) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	w := r.idle[best]
	r.idle = append(r.idle[:best], r.idle[best+1:]...)
	return w
}

// errMoved is a kept worktree whose path no longer leads to it.
var errMoved = errors.New("the worktree was moved or its path replaced")

// intact reports whether the worktree's path still leads to its
// directory: not renamed away, nor swapped for a symlink. One that is
// not is never handed to an agent again.
func (w *Worktree) intact() bool {
	if w.ov != nil {
		// Its mount is reached through its descriptor, never its path,
		// and was mounted on a mount point opened beneath the data
		// directory without following a symlink.
		return w.fd != nil
	}
	fi, err := os.Lstat(w.dir)
	return err == nil && fi.IsDir() && w.fd != nil && w.fd.sameDir(fi)
}

// unpick puts back a worktree pickIdle took.
func (r *Repo) unpick(w *Worktree) {
	r.idleMu.Lock()
	r.idle = append(r.idle, w)
	r.idleMu.Unlock()
}

// bring makes a prepared worktree hold snap: the paths whose contents
// differ rewritten, or, when that fails, every tracked file checked.
func (w *Worktree) bring(ctx context.Context, snap Snapshot) error {
	if w.ov != nil && w.tree != snap.Tree {
		return w.recycle(ctx, snap)
	}
	if w.tree == snap.Tree {
		if w.snap.Commit != snap.Commit {
			if err := w.setHead(snap.Commit); err != nil {
				return w.reset(ctx, snap)
			}
		}
		w.snap = snap
		return nil
	}
	if err := w.switchTree(ctx, snap); err != nil {
		return w.reset(ctx, snap)
	}
	return nil
}

// switchTree moves the worktree from w.tree (which its index and files
// hold) to snap, writing only the paths that differ.
func (w *Worktree) switchTree(ctx context.Context, snap Snapshot) error {
	if w.tree == "" {
		return errTreeUnknown
	}
	if w.stray {
		if _, err := w.g.run(ctx, nil, "clean", "-q", "-ffdx"); err != nil {
			return err
		}
		w.stray = false
	}
	if w.tree != snap.Tree {
		if err := w.switchFiles(ctx, w.tree, snap.Tree); err != nil {
			return err
		}
		parkStep("switched")
	}
	if err := w.setHead(snap.Commit); err != nil {
		return err
	}
	w.tree, w.snap = snap.Tree, snap
	return nil
}

// reset makes the worktree hold snap exactly, checking every tracked
// file: rewritten where it differs, and every other file (ignored ones
// too) deleted.
func (w *Worktree) reset(ctx context.Context, snap Snapshot) error {
	w.tree = ""
	if _, err := w.g.run(ctx, nil, "reset", "-q", "--hard", snap.Commit); err != nil {
		return fmt.Errorf("reuse worktree: %w", err)
	}
	parkStep("reset")
	if _, err := w.g.run(ctx, nil, "clean", "-q", "-ffdx"); err != nil {
		return fmt.Errorf("reuse worktree: %w", err)
	}
	w.tree, w.stray, w.snap = snap.Tree, false, snap
	return w.noteSnapshot(snap.Commit)
}

// setHead points the worktree's HEAD (detached) at commit, writing git's
// file for it (in its git directory, in the home) as git does: a lock
// file renamed over it.
func (w *Worktree) setHead(commit string) error {
	head := filepath.Join(w.admin, "HEAD")
	f, err := os.OpenFile(head+".lock", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("set HEAD: %w", err)
	}
	_, err = f.WriteString(commit + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(head+".lock", head)
	}
	if err != nil {
		os.Remove(head + ".lock")
		return fmt.Errorf("set HEAD: %w", err)
	}
	return w.noteSnapshot(commit)
}

// parkedFile marks, in a worktree's git directory, a worktree being
// made (from its registration until its checkout is done) or parked
// for reuse: from park until takeIdle hands it to an agent, it holds no
// agent's work (what it held was captured, or dropped on purpose), and
// its preparation rewrites its files before it moves its HEAD and its
// snapshot's record. A killed process's worktree so marked is removed
// by Prune with nothing kept: its files against its recorded snapshot
// would be a diff no agent made.
const parkedFile = "troupe-parked"

// markParked writes (on) or removes the worktree's parkedFile.
func (w *Worktree) markParked(on bool) error {
	if w.admin == "" {
		return nil
	}
	path := filepath.Join(w.admin, parkedFile)
	if !on {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("reuse worktree: %w", err)
		}
		return nil
	}
	return writeIfChanged(path, []byte("parked\n"))
}

// parkHook, when set (tests only), is called at the steps of a parked
// worktree's preparation: "switched" (its files rewritten, its HEAD not
// yet moved) and "reset" (git reset done, its snapshot not yet noted);
// and of a new worktree's making: "creating" (registered, its files not
// yet checked out).
var parkHook func(step string)

// parkStep calls parkHook when set.
func parkStep(step string) {
	if parkHook != nil {
		parkHook(step)
	}
}

// noteSnapshot records in the worktree's git directory the snapshot it
// now holds (Prune's reference for a killed process's worktree).
func (w *Worktree) noteSnapshot(commit string) error {
	return writeIfChanged(filepath.Join(w.admin, snapshotFile), []byte(commit+"\n"))
}

// park keeps w for reuse when fewer than Options.KeepIdle are kept, and
// reports whether it did; w is then prepared in the background for the
// latest snapshot.
func (r *Repo) park(w *Worktree, prepared func()) bool {
	r.idleMu.Lock()
	defer r.idleMu.Unlock()
	if len(r.idle) >= r.opts.KeepIdle {
		if w.hand != nil {
			w.hand.forgetScan()
		}
		return false
	}
	if err := w.markParked(true); err != nil {
		return false // never prepared unmarked: Prune could take its files for an agent's work
	}
	w.ready, w.err = make(chan struct{}), nil
	r.idle = append(r.idle, w)
	target := r.latest
	if target.Tree == "" {
		target = w.snap
	}
	if w.ov != nil {
		w.parkOverlay(target, prepared)
		return true
	}
	go func() {
		defer close(w.ready)
		defer prepared()
		ctx, cancel := context.WithTimeout(context.Background(), prepareTimeout)
		defer cancel()
		w.prepared = "switch"
		if w.hand != nil {
			if err := w.restore(ctx); err != nil {
				w.tree = "" // reset below
			} else {
				w.prepared = "restore"
			}
		}
		if err := w.switchTree(ctx, target); err != nil {
			w.prepared = "reset"
			w.err = w.reset(ctx, target)
		}
	}()
	return true
}

// Prewarm makes up to n worktrees of snap in the background and keeps
// them idle (within Options.KeepIdle), so the first agents that need
// one do not wait for a checkout of every file. It returns at once.
func (r *Repo) Prewarm(snap Snapshot, n int) {
	if r.prewarmLower(snap) {
		return
	}
	r.idleMu.Lock()
	defer r.idleMu.Unlock()
	for ; n > 0 && len(r.idle) < r.opts.KeepIdle; n-- {
		r.warmed++
		w := &Worktree{repo: r, ready: make(chan struct{})}
		r.idle = append(r.idle, w)
		name := "idle" + strconv.Itoa(r.warmed)
		prepared := r.preparing()
		go func() {
			defer close(w.ready)
			defer prepared()
			ctx, cancel := context.WithTimeout(context.Background(), prepareTimeout)
			defer cancel()
			made, err := r.create(ctx, snap, name)
			if err != nil {
				w.err = fmt.Errorf("prewarm worktree: %w", err)
				return
			}
			w.dir, w.name, w.at, w.fd, w.admin = made.dir, made.name, made.at, made.fd, made.admin
			w.snap, w.g, w.tree = snap, made.g, snap.Tree
			if err := w.markParked(true); err != nil {
				w.err = fmt.Errorf("prewarm worktree: %w", err)
				return
			}
			w.settle(ctx)
		}()
	}
}

// settle waits for the clock's second to change, then has git record
// the worktree's files again: entries written in the second the index
// was written are "racily clean", and until the index is rewritten
// later every git command rehashes them, every file of a fresh
// checkout. Only prepared worktrees, which no agent uses yet, settle.
func (w *Worktree) settle(ctx context.Context) {
	t := time.NewTimer(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return
	}
	if _, err := w.g.run(ctx, nil, "update-index", "-q", "--refresh"); err != nil {
		w.tree = "" // the next use checks every file
	}
}

// SetKeepIdle changes how many removed worktrees are kept for reuse
// (Options.KeepIdle); worktrees kept beyond a lowered bound stay until
// used or Close.
func (r *Repo) SetKeepIdle(n int) {
	r.idleMu.Lock()
	r.opts.KeepIdle = n
	r.idleMu.Unlock()
}

// Close removes the idle worktrees kept for reuse, once their
// preparation has ended. Worktrees in use are not touched; the Repo may
// still be used.
func (r *Repo) Close(ctx context.Context) error {
	r.idleMu.Lock()
	idle := r.idle
	r.idle = nil
	r.idleMu.Unlock()
	r.objects().close()
	var errs []error
	for _, w := range idle {
		select {
		case <-w.ready:
		case <-ctx.Done():
			return errors.Join(append(errs, ctx.Err())...)
		}
		if w.dir != "" {
			errs = append(errs, w.destroy(ctx))
		}
	}
	r.stopWarming(ctx)
	errs = append(errs, r.closeLowers(ctx))
	if unlock, err := r.lock("apply"); err == nil {
		r.view.drop()
		unlock()
	}
	return errors.Join(errs...)
}
