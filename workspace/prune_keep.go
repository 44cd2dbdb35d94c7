package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/troupe-ai/troupe/internal/overlay"
)

// Prune keeps what a killed process's agents wrote: each dead worktree
// with changes against its snapshot is captured as Salvage captures
// (git add -A into a private index holding the snapshot's tree, the
// home's config: no filter of the repository's runs, no symlink is
// followed, git streams big files) and its patch kept where the run's
// are (KeepChangeset: runs/killed-<pid>/changes/<name>.patch), which
// applies to the snapshot. Where a patch cannot carry it all (a file
// over agent.max_change_bytes, one git would not add, an error) the
// worktree's files (an overlay's upper directory) are kept whole as
// kept-<name>-<n>, beside the worktrees. A dead worktree is first
// claimed by a rename, so two processes starting at once never read
// one the other removes.

// snapshotFile names, in a worktree's git directory, the snapshot it
// was made from (its HEAD moves when its agent commits).
const snapshotFile = "troupe-snapshot"

// claimInfix marks a dead worktree a pruning process claimed.
const claimInfix = "-keep-"

// KeptWork is the work a killed process's worktree held, kept by Prune.
type KeptWork struct {
	Agent    string   // the worktree's name: the agent it was made for
	Snapshot string   // the commit the patch applies to
	Patch    string   // the patch's path; "" when none was written
	Files    []string // the files the patch changes
	Dir      string   // the worktree's files kept whole, when the patch does not carry them all
	Left     []string // what the patch does not carry, and why
}

// Note is the log's line for k: where the work of the killed run went.
func (k KeptWork) Note() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the work of %s in a killed run", k.Agent)
	if k.Patch != "" {
		fmt.Fprintf(&b, " (%d files) is kept in %s (git apply to snapshot %.12s)", len(k.Files), k.Patch, k.Snapshot)
	}
	if k.Dir != "" {
		if k.Patch != "" {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " its files are kept whole in %s", k.Dir)
	}
	if len(k.Left) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(k.Left, "; "))
	}
	return b.String()
}

// PruneKeep is Prune, returning the work it kept.
func (r *Repo) PruneKeep(ctx context.Context) ([]KeptWork, error) {
	parent, err := openBeneath(r.dataBase, r.worktreesRel(), false)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("prune worktrees: %w", err)
	}
	var kept []KeptWork
	if err == nil {
		defer parent.close()
		if kept, err = r.keepDeadWork(ctx, parent); err != nil {
			return kept, fmt.Errorf("prune worktrees: %w", err)
		}
		if err := removeDead(parent); err != nil {
			return kept, fmt.Errorf("prune worktrees: %w", err)
		}
	}
	return kept, r.pruneRecords()
}

// listNames lists the directory d from its start (a descriptor of its
// own: d's offset is left alone).
func listNames(d *dirFD) ([]string, error) {
	fd, err := unix.Openat(d.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), d.f.Name())
	defer f.Close()
	return f.Readdirnames(-1)
}

// removeDead removes what processes no longer running left in the
// worktrees directory parent.
func removeDead(parent *dirFD) error {
	names, err := listNames(parent)
	if err != nil {
		return err
	}
	for _, name := range names {
		if deadOwner(name) {
			if err := removeWorktreeDir(parent, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeWorktreeDir removes name in parent, an overlay's side
// directory's work directory unlocked first.
func removeWorktreeDir(parent *dirFD, name string) error {
	if side, err := parent.sub(name, false); err == nil {
		_ = overlay.UnlockWork(side.fd(), "work")
		side.close()
	}
	return parent.removeAll(name)
}

// keepDeadWork keeps the work of the dead worktrees in parent.
func (r *Repo) keepDeadWork(ctx context.Context, parent *dirFD) ([]KeptWork, error) {
	names, err := listNames(parent)
	if err != nil {
		return nil, err
	}
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
	}
	var admins map[string]string
	var kept []KeptWork
	for _, name := range names {
		if !deadOwner(name) {
			continue
		}
		pid, rest, _ := strings.Cut(name, "-")
		if strings.HasPrefix(rest, claimInfix[1:]) {
			// A pruning process was killed holding it: kept whole.
			agent := strings.TrimSuffix(rest[len(claimInfix)-1:], ".ovl")
			k, err := r.keepWhole(parent, name, agent, KeptWork{Agent: agent})
			if err != nil {
				return kept, err
			}
			kept = append(kept, k)
			continue
		}
		if strings.HasSuffix(name, ".ovl") || strings.HasPrefix(rest, "lower-") {
			continue // an overlay's side (with its mount point) or a lower tree: no agent's work
		}
		if admins == nil {
			admins = r.deadAdmins()
		}
		k, ok, err := r.keepDead(ctx, parent, pid, name, has[name+".ovl"], admins[name])
		if err != nil {
			return kept, err
		}
		if ok {
			kept = append(kept, k)
		}
	}
	return kept, nil
}

// keepDead keeps the work of the dead worktree name (an overlay's when
// overlay), whose git directory was admin ("" unknown); ok is false
// when it held none.
func (r *Repo) keepDead(ctx context.Context, parent *dirFD, pid, name string, overlay bool, admin string) (KeptWork, bool, error) {
	src := name
	if overlay {
		src = name + ".ovl"
	}
	if st, err := parent.lstat(src); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return KeptWork{}, false, nil // gone, or not a worktree: removeDead's
	}
	claimed := strconv.Itoa(os.Getpid()) + claimInfix + src
	if err := unix.Renameat(parent.fd(), src, parent.fd(), claimed); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return KeptWork{}, false, nil // another process claimed it
		}
		return KeptWork{}, false, &fs.PathError{Op: "claim", Path: src, Err: err}
	}
	_, agent, _ := strings.Cut(name, "-")
	k := KeptWork{Agent: agent}
	work := claimed
	if overlay {
		work = claimed + "/up"
	}
	whole, err := r.captureDead(ctx, parent, work, overlay, admin, pid, &k)
	if err != nil {
		k.Left = append(k.Left, err.Error())
		whole = true
	}
	if whole && !emptyDead(parent, work) {
		k, err := r.keepWhole(parent, claimed, agent, k)
		return k, err == nil, err
	}
	if err := removeWorktreeDir(parent, claimed); err != nil {
		return k, k.Patch != "", err
	}
	return k, k.Patch != "", nil
}

// keepWhole renames the claimed dead worktree to kept-<agent>-<n>
// beside the worktrees (Keep's prefix: Prune and Close leave it) and
// records its path in k.Dir (an overlay's: its upper directory).
func (r *Repo) keepWhole(parent *dirFD, claimed, agent string, k KeptWork) (KeptWork, error) {
	name := keptPrefix + agent + "-" + strconv.FormatUint(rand.Uint64()&0xffffff, 16)
	if err := unix.Renameat(parent.fd(), claimed, parent.fd(), name); err != nil {
		return k, &fs.PathError{Op: "keep worktree", Path: claimed, Err: err}
	}
	k.Dir = filepath.Join(r.worktreesDir(), name)
	if strings.HasSuffix(claimed, ".ovl") {
		if side, err := parent.sub(name, false); err == nil {
			_ = overlay.UnlockWork(side.fd(), "work")
			_ = side.removeAll("work")
			side.close()
		}
		k.Dir = filepath.Join(k.Dir, "up")
	}
	return k, nil
}

// emptyDead reports whether the dead worktree at work below parent
// holds nothing but its .git (one made before its git directory was,
// an overlay's upper no agent wrote in).
func emptyDead(parent *dirFD, work string) bool {
	d, err := parent.sub(work, false)
	if err != nil {
		return false
	}
	defer d.close()
	names, err := d.f.Readdirnames(3)
	return (err == nil || errors.Is(err, io.EOF)) && (len(names) == 0 || len(names) == 1 && names[0] == ".git")
}
