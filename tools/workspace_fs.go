package tools

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/troupe-ai/troupe/internal/ignore"
	"github.com/troupe-ai/troupe/internal/search"
)

// The file access of every tool: each takes an absolute path that Resolve
// returned (so inside the root, symlinks resolved) and reaches it through
// the root held open. os.Root opens one component at a time beneath the
// root's descriptor, never following a symlink out of it, so a directory
// swapped for a symlink after Resolve makes the access fail instead of
// escaping. Errors name the path relative to the root; one that left the
// root wraps ErrOutsideWorkspace.

// relOf returns abs relative to the root ("." for the root), or an error
// when abs is not inside it.
func (w *Workspace) relOf(abs string) (string, error) {
	if !w.contains(abs) {
		return "", fmt.Errorf("%w: %q (workspace root is %s)", ErrOutsideWorkspace, abs, w.root)
	}
	rel, err := filepath.Rel(w.root, abs)
	if err != nil {
		return "", fmt.Errorf("%w: %q (workspace root is %s)", ErrOutsideWorkspace, abs, w.root)
	}
	return rel, nil
}

// fsErr rewrites an error of an os.Root call for the model: the path as
// shown (relative), the operation without the "at" of the system call,
// and an escape from the root as ErrOutsideWorkspace.
func (w *Workspace) fsErr(err error, rel string) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return err
	}
	if p := pe.Path; p != "" && !filepath.IsAbs(p) {
		rel = p
	}
	display := filepath.ToSlash(rel)
	if isEscape(pe.Err) {
		return fmt.Errorf("%w: %q leads out of it through a symbolic link (workspace root is %s)", ErrOutsideWorkspace, display, w.root)
	}
	return &fs.PathError{Op: strings.TrimSuffix(pe.Op, "at"), Path: display, Err: pe.Err}
}

// explain is fsErr for an error met at abs (or below it, when the error
// names its own path).
func (w *Workspace) explain(err error, abs string) error { return w.fsErr(err, w.Rel(abs)) }

// isEscape reports whether err is os.Root's refusal of a path that leaves
// it (the error is not exported; its text is stable).
func isEscape(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}

// target is a search of abs (grep, find_files): the walk opens
// everything beneath the root held open.
func (w *Workspace) target(abs string) search.Target {
	return search.Target{Root: w.root, Path: abs, Dir: w.dir}
}

// matcher returns an ignore matcher for the workspace that reads its rule
// files beneath the root.
func (w *Workspace) matcher() *ignore.Matcher { return ignore.NewMatcherIn(w.root, w.dir) }

// openRoot opens the folder abs beneath the root, as a root of its own;
// the caller closes it.
func (w *Workspace) openRoot(abs string) (*os.Root, error) {
	rel, err := w.relOf(abs)
	if err != nil {
		return nil, err
	}
	d, err := w.dir.OpenRoot(rel)
	return d, w.fsErr(err, rel)
}

// Stat is os.Stat beneath the root.
func (w *Workspace) Stat(abs string) (fs.FileInfo, error) {
	rel, err := w.relOf(abs)
	if err != nil {
		return nil, err
	}
	fi, err := w.dir.Stat(rel)
	return fi, w.fsErr(err, rel)
}

// Lstat is os.Lstat beneath the root.
func (w *Workspace) Lstat(abs string) (fs.FileInfo, error) {
	rel, err := w.relOf(abs)
	if err != nil {
		return nil, err
	}
	fi, err := w.dir.Lstat(rel)
	return fi, w.fsErr(err, rel)
}

// readFlags open for reading without waiting on a named pipe and without
// taking a terminal: what it is, is checked on the descriptor.
const readFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY

// open opens abs for reading and returns it with what it is (checked on
// the descriptor, so it is the file read). It may be a directory, a pipe
// or a device: the caller refuses what it cannot read; what cannot even
// be opened (a socket) is a *notRegularError. Reads of a regular
// file do not care about the non-blocking flag.
func (w *Workspace) open(abs string) (*os.File, fs.FileInfo, error) {
	rel, err := w.relOf(abs)
	if err != nil {
		return nil, nil, err
	}
	f, err := w.dir.OpenFile(rel, readFlags, 0)
	if err != nil {
		// A socket cannot be opened at all (ENXIO): say what it is rather
		// than what open said.
		if fi, serr := w.dir.Stat(rel); serr == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
			return nil, nil, &notRegularError{path: filepath.ToSlash(rel), mode: fi.Mode()}
		}
		return nil, nil, w.fsErr(err, rel)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, w.fsErr(err, rel)
	}
	return f, fi, nil
}

// errNotRegular is readFile's refusal of anything but a regular file.
var errNotRegular = errors.New("not a regular file")

// ReadFile reads a whole regular file beneath the root.
func (w *Workspace) ReadFile(abs string) ([]byte, error) {
	f, fi, err := w.open(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: w.Rel(abs), Err: errNotRegular}
	}
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + bytes.MinRead)
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, w.fsErr(err, w.Rel(abs))
	}
	return buf.Bytes(), nil
}

// mkdirAll creates the folder abs and its missing parents with
// permission bits perm.
func (w *Workspace) mkdirAll(abs string, perm fs.FileMode) error {
	rel, err := w.relOf(abs)
	if err != nil {
		return err
	}
	if err := w.checkRel(rel); err != nil {
		return err
	}
	return w.fsErr(w.dir.MkdirAll(rel, perm), rel)
}

// Mkdirs creates the folder abs and its missing parents, and returns the
// ones it created (absolute), outermost first, so they can be removed
// again.
func (w *Workspace) Mkdirs(abs string) ([]string, error) {
	rel, err := w.relOf(abs)
	if err != nil || rel == "." {
		return nil, err
	}
	if err := w.checkRel(rel); err != nil {
		return nil, err
	}
	var made []string
	parts := strings.Split(rel, string(filepath.Separator))
	for i := range parts {
		sub := filepath.Join(parts[:i+1]...)
		err := w.dir.Mkdir(sub, 0o755)
		switch {
		case err == nil:
			made = append(made, filepath.Join(w.root, sub))
			continue
		case !errors.Is(err, fs.ErrExist):
			return made, w.fsErr(err, sub)
		}
		fi, err := w.dir.Stat(sub)
		if err != nil {
			return made, w.fsErr(err, sub)
		}
		if !fi.IsDir() {
			return made, &fs.PathError{Op: "mkdir", Path: filepath.ToSlash(sub), Err: syscall.ENOTDIR}
		}
	}
	return made, nil
}

// Remove removes the file, symlink or empty folder abs (not what a
// symlink points to).
func (w *Workspace) Remove(abs string) error {
	rel, err := w.relOf(abs)
	if err != nil {
		return err
	}
	if err := w.checkRel(rel); err != nil {
		return err
	}
	return w.fsErr(w.dir.Remove(rel), rel)
}

// Readlink returns the target of the symlink abs.
func (w *Workspace) Readlink(abs string) (string, error) {
	rel, err := w.relOf(abs)
	if err != nil {
		return "", err
	}
	target, err := w.dir.Readlink(rel)
	return target, w.fsErr(err, rel)
}

// Symlink creates the symlink abs pointing to target (a rollback
// restoring a link that was there).
func (w *Workspace) Symlink(target, abs string) error {
	rel, err := w.relOf(abs)
	if err != nil {
		return err
	}
	if err := w.checkRel(rel); err != nil {
		return err
	}
	return w.fsErr(w.dir.Symlink(target, rel), rel)
}
