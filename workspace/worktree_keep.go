package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// keptPrefix starts the name of a worktree kept after its changes could
// not be brought back: not a process ID, so Prune leaves it, and never
// handed out again.
const keptPrefix = "kept-"

// Keep ends the agent's use of the worktree when its changes could not
// be captured or brought back: the worktree is neither parked for reuse
// nor deleted, but renamed to kept-<name>-<n> in the worktrees
// directory, where Prune and Close leave it, and its path is returned
// for the user to recover the work from. Its registration with troupe's
// git ends (the .git file naming it is removed): it is a plain
// directory of the agent's files from then on.
func (w *Worktree) Keep(ctx context.Context) (string, error) {
	if w.removed {
		return "", errors.New("keep worktree: it was removed")
	}
	w.removed = true
	w.leaveLive()
	if w.fd == nil {
		return "", errors.New("keep worktree: not open")
	}
	if w.ov != nil {
		return w.keepOverlay(ctx)
	}
	parent, err := openBeneath(w.repo.dataBase, w.repo.worktreesRel(), false)
	if err != nil {
		return "", fmt.Errorf("keep worktree: %w", err)
	}
	defer parent.close()
	name := keptPrefix + w.name + "-" + strconv.FormatUint(rand.Uint64()&0xffffff, 16)
	if err := unix.Renameat(parent.fd(), w.name, parent.fd(), name); err != nil {
		return "", &fs.PathError{Op: "keep worktree", Path: w.dir, Err: err}
	}
	// Its directory is held open: the .git file removed is the kept
	// one's. Failing to tidy these leaves the files kept all the same
	// (a .git an agent made a directory stays; Prune drops the record).
	_ = w.fd.remove(".git")
	if w.admin != "" {
		_ = removeAtomically(w.admin, w.repo.home.tmpDir())
	}
	w.fd.close()
	w.fd = nil
	return filepath.Join(w.repo.worktreesDir(), name), nil
}
