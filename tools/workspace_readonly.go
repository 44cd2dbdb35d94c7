package tools

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrReadOnly is wrapped by the file tools' refusal to change what
// configures git or troupe.
var ErrReadOnly = errors.New("read-only to agents (rule: what configures git and troupe is not the agent's: " +
	".git holds git's config, hooks, info and worktrees, .troupe troupe's own files; read_file may read them, nothing an agent runs may change them)")

// ReadOnlyNames are the entries of a workspace's root that agents may read
// but not change: git's folder (or a worktree's .git file) and troupe's.
// The file tools refuse to write, create, move or delete anything there,
// and the sandbox keeps commands from it likewise (tools/sandbox).
var ReadOnlyNames = []string{".git", ".troupe"}

// CheckWritable refuses a change at abs (as Resolve returned it) when abs
// is, or lies beneath, one of ReadOnlyNames at the root.
func (w *Workspace) CheckWritable(abs string) error {
	rel, err := w.relOf(abs)
	if err != nil {
		return err
	}
	return w.checkRel(rel)
}

func (w *Workspace) checkRel(rel string) error {
	first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	if slices.Contains(ReadOnlyNames, first) {
		return fmt.Errorf("%s is %w", filepath.ToSlash(rel), ErrReadOnly)
	}
	return nil
}

// checkOpened refuses the folder d (opened beneath the root) when it is,
// as the kernel names it now, one of ReadOnlyNames or beneath one: a
// folder on the way swapped for a link into .git after CheckWritable
// looked is caught here, before anything is written through d. Where the
// kernel does not name open folders (/proc/self/fd), CheckWritable's
// look stands alone.
func (w *Workspace) checkOpened(d *os.Root) error {
	f, err := d.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err == nil && w.view != nil {
		real = w.fromInside(real) // a view's tree is named by its Inside path
	}
	if err != nil || !filepath.IsAbs(real) || !w.contains(real) {
		return nil
	}
	rel, err := filepath.Rel(w.root, real)
	if err != nil {
		return nil
	}
	return w.checkRel(rel)
}
