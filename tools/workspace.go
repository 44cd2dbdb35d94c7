package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutsideWorkspace is wrapped by every confinement error.
var ErrOutsideWorkspace = errors.New("path is outside the workspace")

// Workspace is the root directory every tool is confined to. Paths are
// resolved against it with symlinks followed; a path that lands outside is
// refused whether it got there by "..", an absolute path or a symlink.
//
// Resolving a path only names a file: every file access then goes through
// the root held open as an *os.Root (workspace_fs.go), which resolves each
// component beneath the root's descriptor and refuses to leave it, so a
// component swapped for a symlink between the check and the open cannot
// lead outside.
type Workspace struct {
	root string   // absolute, symlinks resolved (a view's: as given)
	dir  *os.Root // the root, held open until Close
	view *viewOf  // how commands see a view root (workspace_view.go); nil for a plain one
}

// NewWorkspace opens dir as a workspace root. It must be an existing
// directory.
func NewWorkspace(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace %s: not a directory", dir)
	}
	d, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	return &Workspace{root: real, dir: d}, nil
}

// Close releases the workspace's root; file tools fail after it. Calling
// it again does nothing.
func (w *Workspace) Close() error { return w.dir.Close() }

// Root is the workspace's absolute, symlink-free path.
func (w *Workspace) Root() string { return w.root }

// Resolve turns a path argument (relative to the root, or absolute) into an
// absolute path with every symlink of its existing part resolved, and
// refuses it when the result is outside the root. The path need not exist
// (write_file creates files), but the part that exists decides.
func (w *Workspace) Resolve(p string) (string, error) {
	p = unquotePath(p) // a quoted name from a listing
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	if p == "" {
		p = "."
	}
	if w.view != nil {
		return w.resolveView(p)
	}
	var abs string
	if filepath.IsAbs(p) {
		abs = filepath.Clean(p)
	} else {
		abs = filepath.Join(w.root, p)
	}
	real, err := resolveExisting(abs)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", p, err)
	}
	if !w.contains(real) {
		return "", fmt.Errorf("%w: %q (workspace root is %s)", ErrOutsideWorkspace, p, w.root)
	}
	return real, nil
}

// Lexical is Resolve without following symlinks: the path joined to the
// root and cleaned, refused when it leaves the root lexically. It is for
// bookkeeping (cache scopes), never for opening files.
func (w *Workspace) Lexical(p string) (string, error) {
	p = unquotePath(p)
	abs := filepath.Clean(p)
	if !filepath.IsAbs(p) {
		abs = filepath.Join(w.root, p)
	} else if w.view != nil {
		abs = w.fromInside(abs)
	}
	if !w.contains(abs) {
		return "", fmt.Errorf("%w: %q (workspace root is %s)", ErrOutsideWorkspace, p, w.root)
	}
	return abs, nil
}

// Rel returns abs relative to the root with forward slashes ("." for the
// root itself). abs must be inside the workspace.
func (w *Workspace) Rel(abs string) string {
	r, err := filepath.Rel(w.root, abs)
	if err != nil {
		return abs
	}
	return filepath.ToSlash(r)
}

// Display is how a resolved path is shown to the model: relative to the
// root when inside it, absolute otherwise.
func (w *Workspace) Display(abs string) string {
	if w.contains(abs) {
		return w.Rel(abs)
	}
	return abs
}

func (w *Workspace) contains(abs string) bool {
	if abs == w.root {
		return true
	}
	root := w.root
	if !strings.HasSuffix(root, string(filepath.Separator)) {
		root += string(filepath.Separator)
	}
	return strings.HasPrefix(abs, root)
}

// resolveExisting resolves symlinks in the longest existing prefix of abs
// and appends the rest unchanged. A dangling symlink is followed to its
// target so that writing through it cannot escape.
func resolveExisting(abs string) (string, error) {
	rest := ""
	cur := abs
	for hops := 0; ; hops++ {
		if hops > 255 {
			return "", errors.New("too many levels of symbolic links")
		}
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		// cur may itself be a dangling symlink: follow it by hand.
		if target, lerr := os.Readlink(cur); lerr == nil {
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(cur), target)
			}
			cur = filepath.Join(target, rest)
			rest = ""
			continue
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return filepath.Join(cur, rest), nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
