package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Worktree is a directory materialised from a snapshot, where one agent
// works without seeing the others' changes.
type Worktree struct {
	repo  *Repo
	dir   string // its path
	name  string // its directory's name in the Repo's worktrees directory
	at    string // how file operations and git reach it (anchorPath)
	fd    *dirFD // its directory, held open
	admin string // its git directory, in the home
	snap  Snapshot
	g     git

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

	ov *overlayWorker // an overlay worktree's mount (overlay_worktree.go); nil for a checkout

	filtered *converter // its files checked out through the user's filters (checkout_filters.go); nil: none

	// A cached lower being built: the lower its files may be linked
	// from (lower_link.go), and whether they were written in Go, each
	// its blob's bytes.
	linkFrom *linkSource
	raw      bool
}

// worktreesDir is where a Repo's worktrees live.
func (r *Repo) worktreesDir() string { return filepath.Join(r.dataDir, "worktrees") }

// worktreesRel is worktreesDir below r.dataBase.
func (r *Repo) worktreesRel() string { return filepath.Join(r.dataRel, "worktrees") }

// NewWorktree materialises snap in a worktree named name (unique among
// the process's live worktrees; an agent ID will do): an idle one kept
// for reuse (Options.KeepIdle), which rewrites only the files that
// differ, or a new one. The checkout runs in parallel with others.
func (r *Repo) NewWorktree(ctx context.Context, snap Snapshot, name string) (*Worktree, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return nil, fmt.Errorf("new worktree: bad name %q", name)
	}
	if w := r.takeIdle(ctx, snap); w != nil {
		if err := w.smudgeFiltered(ctx); err != nil {
			_ = w.destroy(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("new worktree %s: %w", name, err)
		}
		w.handOver(ctx)
		w.goLive()
		return w, nil
	}
	kind, err := r.worktreeKind()
	var w *Worktree
	if err == nil && kind == WorktreesOverlay {
		w, err = r.createOverlay(ctx, snap, name)
	} else if err == nil {
		w, err = r.create(ctx, snap, name)
	}
	if err == nil {
		if err = w.smudgeFiltered(ctx); err != nil {
			_ = w.destroy(context.WithoutCancel(ctx))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("new worktree %s: %w", name, err)
	}
	w.handOver(ctx)
	w.goLive()
	return w, nil
}

// create makes a new worktree named name and checks snap out in it (in
// Go when that gives what git's checkout gives: materialise.go). Its
// directory is made below the data directory without following a
// symlink and held open: troupe's file operations and git commands in
// it are anchored to that directory (anchorPath), whatever is renamed
// or swapped on the way to it later. Its git directory is made in the
// home (register).
func (r *Repo) create(ctx context.Context, snap Snapshot, name string) (*Worktree, error) {
	base := strconv.Itoa(os.Getpid()) + "-" + name
	parent, err := openBeneath(r.dataBase, r.worktreesRel(), true)
	if err != nil {
		return nil, err
	}
	defer parent.close()
	if err := unix.Mkdirat(parent.fd(), base, 0o755); err != nil {
		return nil, &fs.PathError{Op: "mkdir", Path: filepath.Join(r.worktreesDir(), base), Err: err}
	}
	fd, err := parent.sub(base, false)
	if err != nil {
		return nil, err
	}
	w := &Worktree{repo: r, dir: filepath.Join(r.worktreesDir(), base), name: base, snap: snap, fd: fd}
	if err := w.populate(ctx); err != nil {
		_ = w.destroy(context.WithoutCancel(ctx))
		return nil, err
	}
	return w, nil
}

// populate registers the new worktree w (its directory made and held
// open in w.fd), writes its .git file and checks its snapshot out.
func (w *Worktree) populate(ctx context.Context) error {
	r := w.repo
	w.at = anchorPath(w.fd, w.dir)
	var err error
	// Registered parked (parkedFile): a process killed before its checkout
	// is done leaves no agent's work, only a half-written tree Prune removes.
	if w.admin, err = r.register(w.dir, w.snap.Commit, true); err == nil {
		err = w.fd.writeNew(".git", 0o644, []byte("gitdir: "+w.admin+"\n"))
	}
	if err != nil {
		return err
	}
	w.g = r.worktreeGit(w.admin, w.at, w.dir)
	parkStep("creating")
	if err := w.checkout(ctx); err != nil {
		return err
	}
	return w.markParked(false)
}

// register makes the git directory of the worktree at dir in the home,
// its HEAD detached at commit, as git worktree add does: made under a
// temporary name and renamed into worktrees/, so git never sees half of
// it. parked marks it parkedFile from the start. It returns its path.
func (r *Repo) register(dir, commit string, parked bool) (string, error) {
	tmp, err := os.MkdirTemp(r.home.tmpDir(), r.home.tmpName("worktree"))
	if err != nil {
		return "", err
	}
	files := map[string]string{"HEAD": commit + "\n", "commondir": "../..\n", "gitdir": filepath.Join(dir, ".git") + "\n",
		snapshotFile: commit + "\n"}
	if parked {
		files[parkedFile] = "parked\n"
	}
	for name, data := range files {
		if err = os.WriteFile(filepath.Join(tmp, name), []byte(data), 0o644); err != nil {
			break
		}
	}
	admin := filepath.Join(r.home.dir, "worktrees", filepath.Base(dir)+"-"+strconv.FormatUint(rand.Uint64()&0xffffffff, 16))
	if err == nil {
		err = os.Rename(tmp, admin)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("register worktree: %w", err)
	}
	return admin, nil
}

// worktreeGit is git for a worktree: its git directory admin in the
// home, its work tree at (anchored; dir where it is not).
func (r *Repo) worktreeGit(admin, at, dir string) git {
	g := r.home.git()
	g.gitDir, g.conf = admin, r.g.conf
	g.dir, g.workTree = at, at
	if at != dir {
		g.workTree = "." // git runs in the directory, reached through its descriptor
	}
	return g
}

// Dir is the worktree's directory (the top of the repository's tree), as
// this process reaches it: an overlay worktree's merged view.
func (w *Worktree) Dir() string {
	if w.ov != nil {
		return w.ov.view
	}
	return w.dir
}

// Root is the workspace root inside the worktree: Dir, or the directory
// in it matching the workspace's place in its repository.
func (w *Worktree) Root() string {
	if w.ov != nil {
		return filepath.Join(w.ov.view, filepath.FromSlash(strings.TrimSuffix(w.snap.Prefix, "/")))
	}
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
	w.leaveLive()
	prepared := w.repo.preparing()
	if w.repo.park(w, prepared) {
		return nil
	}
	prepared()
	return w.destroy(ctx)
}

// destroy deletes the worktree (without following a symlink on the
// way: one an agent swapped in is removed, not what it names) and its
// git directory.
func (w *Worktree) destroy(ctx context.Context) error {
	w.leaveLive()
	var errs []error
	if w.admin != "" {
		errs = append(errs, removeAtomically(w.admin, w.repo.home.tmpDir()))
	}
	if w.ov != nil {
		errs = append(errs, w.destroyOverlay())
	} else {
		errs = append(errs, w.removeDir())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove worktree: %w", err)
	}
	return nil
}

// removeDir closes and removes a checkout's directory.
func (w *Worktree) removeDir() error {
	if w.fd != nil {
		w.fd.close()
		w.fd = nil
	}
	parent, err := openBeneath(w.repo.dataBase, w.repo.worktreesRel(), false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	defer parent.close()
	return parent.removeAll(w.name)
}

// removeAtomically renames the directory dir into tmp, then removes it,
// so git never sees half of it.
func removeAtomically(dir, tmp string) error {
	gone := filepath.Join(tmp, strconv.Itoa(os.Getpid())+"-gone-"+strconv.FormatUint(rand.Uint64(), 16))
	if err := os.Rename(dir, gone); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return os.RemoveAll(gone)
}

// Prune removes the worktrees left by processes that are no longer
// running (a killed orchestrator or node) and their git directories,
// keeping first the work their agents had written (prune_keep.go; the
// kept work is PruneKeep's to report). Call it when a process starts.
func (r *Repo) Prune(ctx context.Context) error {
	_, err := r.PruneKeep(ctx)
	return err
}

// deadOwner reports whether name (<pid>-...) was made by a process that
// is no longer running.
func deadOwner(name string) bool {
	pid, _, ok := strings.Cut(name, "-")
	n, err := strconv.Atoi(pid)
	return ok && err == nil && n > 0 && n != os.Getpid() && !alive(n)
}

// dropDeadRecords removes the git directories in dir (a home's
// worktrees) of worktrees that a process no longer running made.
func dropDeadRecords(dir, tmp string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, e := range entries {
		if deadOwner(e.Name()) {
			if err := removeAtomically(filepath.Join(dir, e.Name()), tmp); err != nil {
				return err
			}
		}
	}
	return nil
}

// alive reports whether a process with ID pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
