package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Worktree is a directory materialised from a snapshot, where one agent
// works without seeing the others' changes.
type Worktree struct {
	repo *Repo
	dir  string
	snap Snapshot
	g    git

	// What a worktree kept for reuse is known to hold (worktree_reuse.go).
	tree  string        // the tree its index holds and its tracked files match; "" unknown
	stray bool          // files outside the index (new or ignored) may be there
	ready chan struct{} // closed when a parked worktree's preparation has ended
	err   error         // why its preparation failed, when it did

	removed bool // Remove was called since the agent got it

	// What the worktree held when handed to its agent (manifest.go): nil
	// when the Go path cannot vouch for it, handErr saying why.
	hand     *manifest
	handErr  error
	captured string // how the last capture was made: "go" or "git"
	prepared string // how its last preparation for reuse went: "restore", "switch" or "reset"
}

// worktreesDir is where a Repo's worktrees live.
func (r *Repo) worktreesDir() string { return filepath.Join(r.dataDir, "worktrees") }

// NewWorktree materialises snap in a worktree named name (unique among
// the process's live worktrees; an agent ID will do): an idle one kept
// for reuse (Options.KeepIdle), which rewrites only the files that
// differ, or a new one. Registering a new worktree with git is
// serialised per repository; the checkout runs in parallel with others.
func (r *Repo) NewWorktree(ctx context.Context, snap Snapshot, name string) (*Worktree, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return nil, fmt.Errorf("new worktree: bad name %q", name)
	}
	if w := r.takeIdle(ctx, snap); w != nil {
		w.handOver(ctx)
		return w, nil
	}
	w, err := r.create(ctx, snap, name)
	if err != nil {
		return nil, fmt.Errorf("new worktree %s: %w", name, err)
	}
	w.handOver(ctx)
	return w, nil
}

// create registers a new worktree named name and checks snap out in it
// (in Go when that gives what git's checkout gives: materialise.go).
func (r *Repo) create(ctx context.Context, snap Snapshot, name string) (*Worktree, error) {
	dir := filepath.Join(r.worktreesDir(), strconv.Itoa(os.Getpid())+"-"+name)
	if err := os.MkdirAll(r.worktreesDir(), 0o755); err != nil {
		return nil, err
	}
	unlock, err := r.lock("worktree")
	if err != nil {
		return nil, err
	}
	_, err = r.admin.run(ctx, nil, "worktree", "add", "-q", "--no-checkout", "--detach", dir, snap.Commit)
	unlock()
	if err != nil {
		return nil, err
	}
	w := &Worktree{repo: r, dir: dir, snap: snap, g: git{dir: dir, conf: r.g.conf}}
	if err := w.checkout(ctx); err != nil {
		_ = w.destroy(context.WithoutCancel(ctx))
		return nil, err
	}
	return w, nil
}

// Dir is the worktree's directory (the top of the repository's tree).
func (w *Worktree) Dir() string { return w.dir }

// Root is the workspace root inside the worktree: Dir, or the directory
// in it matching the workspace's place in its repository.
func (w *Worktree) Root() string {
	return filepath.Join(w.dir, filepath.FromSlash(strings.TrimSuffix(w.snap.Prefix, "/")))
}

// Snapshot is the snapshot the worktree was made from.
func (w *Worktree) Snapshot() Snapshot { return w.snap }

// Remove ends the agent's use of the worktree: it is kept for reuse
// (Options.KeepIdle) or deleted and unregistered.
func (w *Worktree) Remove(ctx context.Context) error {
	if w.removed {
		return nil // a second Remove must not park it twice
	}
	w.removed = true
	if w.repo.park(w) {
		return nil
	}
	return w.destroy(ctx)
}

// destroy deletes the worktree and unregisters it.
func (w *Worktree) destroy(ctx context.Context) error {
	unlock, err := w.repo.lock("worktree")
	if err != nil {
		return fmt.Errorf("remove worktree: %w", err)
	}
	_, gitErr := w.repo.admin.run(ctx, nil, "worktree", "remove", "--force", "--force", w.dir)
	unlock()
	if err := os.RemoveAll(w.dir); err != nil {
		return fmt.Errorf("remove worktree: %w", err)
	}
	if gitErr != nil {
		return w.repo.pruneGit(ctx)
	}
	return nil
}

// Prune removes the worktrees left by processes that are no longer
// running (a killed orchestrator or node) and unregisters them. Call it
// when a process starts.
func (r *Repo) Prune(ctx context.Context) error {
	entries, err := os.ReadDir(r.worktreesDir())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("prune worktrees: %w", err)
	}
	for _, e := range entries {
		pid, _, ok := strings.Cut(e.Name(), "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n == os.Getpid() || alive(n) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(r.worktreesDir(), e.Name())); err != nil {
			return fmt.Errorf("prune worktrees: %w", err)
		}
	}
	return r.pruneGit(ctx)
}

// pruneGit drops git's records of worktrees whose directories are gone.
func (r *Repo) pruneGit(ctx context.Context) error {
	unlock, err := r.lock("worktree")
	if err != nil {
		return fmt.Errorf("prune worktrees: %w", err)
	}
	defer unlock()
	// A process killed inside `git worktree add` can leave a record half
	// written (no commondir yet), and git then fails on every worktree
	// command; a dead process's records go before git runs.
	if err := dropDeadRecords(filepath.Join(r.lockDir, "worktrees")); err != nil {
		return fmt.Errorf("prune worktrees: %w", err)
	}
	if _, err := r.admin.run(ctx, nil, "worktree", "prune"); err != nil {
		return fmt.Errorf("prune worktrees: %w", err)
	}
	return nil
}

// dropDeadRecords removes the records in dir (git's worktree records) of
// worktrees that a process no longer running made: ours are named
// <pid>-<agent>, their checkouts already removed by Prune.
func dropDeadRecords(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, e := range entries {
		pid, _, ok := strings.Cut(e.Name(), "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n <= 0 || n == os.Getpid() || alive(n) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// alive reports whether a process with ID pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
