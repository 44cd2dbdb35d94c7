package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A view root is a directory this process reaches through a path that
// must never be resolved, such as an overlay worktree's merged view at
// /proc/<holder>/root/<mount point>: filepath.EvalSymlinks would turn it
// into the mount point, an empty directory in this process's namespace.
// The commands the tools start see the same tree at another path (Inside,
// the mount point in the holder's namespace) and reach it by entering
// first (Enter). Resolve then works relative to the root: the path is
// cleaned lexically, and each existing component is looked at beneath
// the root held open (os.Root), a symlink followed by reading it there;
// an absolute link or argument counts when it names the tree by either
// of its paths, and anything that leaves the tree is refused.

// View says how a view root is seen by the commands the tools start.
type View struct {
	// Inside is the tree's absolute path as the commands see it.
	Inside string
	// Enter is the argv prefix that starts a program inside the tree's
	// namespaces with its working directory at dir (a path below
	// Inside, or Inside itself).
	Enter func(dir string) []string
}

// viewOf is a workspace's View, its Inside cleaned.
type viewOf struct {
	inside string
	enter  func(dir string) []string
}

// NewWorkspaceView opens the directory root, a view, as a workspace
// root without resolving it (see View).
func NewWorkspaceView(root string, v View) (*Workspace, error) {
	if !filepath.IsAbs(root) || !filepath.IsAbs(v.Inside) || v.Enter == nil {
		return nil, fmt.Errorf("workspace view %s: needs absolute paths and an Enter", root)
	}
	root = filepath.Clean(root)
	d, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	fi, err := d.Stat(".")
	if err != nil || !fi.IsDir() {
		d.Close()
		return nil, fmt.Errorf("workspace %s: not a directory", root)
	}
	return &Workspace{root: root, dir: d, view: &viewOf{inside: filepath.Clean(v.Inside), enter: v.Enter}}, nil
}

// CommandRoot is the root's path as the commands the tools start see it:
// a view's Inside, else Root.
func (w *Workspace) CommandRoot() string {
	if w.view != nil {
		return w.view.inside
	}
	return w.root
}

// CommandPath is abs (inside the root, as Resolve returns it) as the
// commands see it.
func (w *Workspace) CommandPath(abs string) string {
	if w.view == nil || !w.contains(abs) {
		return abs
	}
	return filepath.Join(w.view.inside, w.Rel(abs))
}

// Enter is the argv prefix that starts a program in the directory dir
// (a path inside the root, as Resolve returns it) for a view root, nil
// for a plain one, whose commands start there as they are.
func (w *Workspace) Enter(dir string) []string {
	if w.view == nil {
		return nil
	}
	return w.view.enter(w.CommandPath(dir))
}

// fromInside maps an absolute path naming the tree by its Inside path to
// the root's own; any other path is returned as it is.
func (w *Workspace) fromInside(abs string) string {
	in := w.view.inside
	if abs == in {
		return w.root
	}
	if rest, ok := strings.CutPrefix(abs, in+string(filepath.Separator)); ok {
		return filepath.Join(w.root, rest)
	}
	return abs
}

// viewRel is abs (clean) relative to a view root, by either of its paths.
func (w *Workspace) viewRel(abs string) (string, bool) {
	abs = w.fromInside(abs)
	if !w.contains(abs) {
		return "", false
	}
	rel, err := filepath.Rel(w.root, abs)
	return rel, err == nil
}

// resolveView is Resolve for a view root: p (not empty) resolved beneath
// the root, its symlinks read there and followed while they stay in it.
func (w *Workspace) resolveView(p string) (string, error) {
	outside := func() (string, error) {
		return "", fmt.Errorf("%w: %q (workspace root is %s)", ErrOutsideWorkspace, p, w.view.inside)
	}
	rel := filepath.Clean(p)
	if filepath.IsAbs(rel) {
		var ok bool
		if rel, ok = w.viewRel(rel); !ok {
			return outside()
		}
	}
	todo := splitRel(rel)
	var done []string
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		if c == ".." {
			if len(done) == 0 {
				return outside()
			}
			done = done[:len(done)-1]
			continue
		}
		at := filepath.Join(append(done, c)...)
		fi, err := w.dir.Lstat(at)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			done = append(done, c) // the rest need not exist
			continue
		case err != nil:
			return "", fmt.Errorf("resolve %s: %w", p, w.fsErr(err, at))
		case fi.Mode()&fs.ModeSymlink == 0:
			done = append(done, c)
			continue
		}
		if hops++; hops > 255 {
			return "", fmt.Errorf("resolve %s: too many levels of symbolic links", p)
		}
		target, err := w.dir.Readlink(at)
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", p, w.fsErr(err, at))
		}
		if filepath.IsAbs(target) {
			t, ok := w.viewRel(filepath.Clean(target))
			if !ok {
				return outside()
			}
			done, todo = nil, append(splitRel(t), todo...)
			continue
		}
		todo = append(splitRel(target), todo...)
	}
	return filepath.Join(append([]string{w.root}, done...)...), nil
}

// splitRel splits a relative path into its components ("." gives none).
func splitRel(rel string) []string {
	var out []string
	for _, c := range strings.Split(filepath.ToSlash(rel), "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}
