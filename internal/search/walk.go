package search

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/troupe-ai/troupe/internal/ignore"
)

// Target is what a search walks.
type Target struct {
	// Root is the workspace root, absolute; ignore rules are read from it
	// down.
	Root string
	// Path is the absolute file or directory to search, inside Root. It is
	// searched even when hidden or ignored, as ripgrep searches a path it
	// is given; the hidden and ignored entries below it are skipped.
	Path string
	// Dir is Root held open. Everything the search reads is opened beneath
	// it: Path through os.Root (symlinks inside the root followed, none
	// out of it), each directory below relative to its parent's descriptor
	// and each file relative to its directory's, never following a
	// symlink, so a directory swapped for a symlink during the walk cannot
	// lead it outside. Nil opens Root for the call.
	Dir *os.Root
	// Workers bounds the goroutines reading directories and files; zero
	// means one per CPU (GOMAXPROCS), at least two.
	Workers int
}

// open returns the root to open paths beneath and a function releasing
// it.
func (t Target) open() (*os.Root, func(), error) {
	if t.Dir != nil {
		return t.Dir, func() {}, nil
	}
	r, err := os.OpenRoot(t.Root)
	if err != nil {
		return nil, nil, err
	}
	return r, func() { r.Close() }, nil
}

// rel returns p relative to the root, or ErrOutsideRoot.
func (t Target) rel(p string) (string, error) {
	rel, err := filepath.Rel(t.Root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%s: %w", p, ErrOutsideRoot)
	}
	return rel, nil
}

// Entry is one path found by the walk.
type Entry struct {
	Path string      // absolute
	Name string      // base name
	Type fs.FileMode // type bits only: 0 for a regular file, fs.ModeDir, fs.ModeSymlink, ...
	dir  dirHandle   // the open directory holding it, valid during the visit
	pre  *opened     // the target itself when it is a file, opened beneath the root
}

// explicit reports whether the entry is the search's target, named by
// the caller, rather than one met in the walk.
func (e Entry) explicit() bool { return e.pre != nil }

// visitFunc handles one entry on a walker goroutine (0 <= worker <
// workers); a non-nil error stops the walk and is returned by it.
type visitFunc func(worker int, e Entry) error

func (t Target) workers() int {
	if t.Workers > 0 {
		return t.Workers
	}
	return max(2, runtime.GOMAXPROCS(0))
}

// walk calls visit for every entry below t.Path that is neither hidden nor
// ignored, directories included when dirs is set, from t.workers()
// goroutines at once. It does not follow symbolic links. When t.Path is a
// file, visit sees just that file. Unreadable directories are skipped.
func walk(stopped *atomic.Bool, t Target, dirs bool, visit visitFunc) error {
	root, release, err := t.open()
	if err != nil {
		return err
	}
	defer release()
	rel, err := t.rel(t.Path)
	if err != nil {
		return err
	}
	dir, file, typ, err := openStart(root, rel)
	if err != nil {
		return err
	}
	if file != nil {
		defer file.close()
		return visit(0, Entry{Path: t.Path, Name: filepath.Base(t.Path), Type: typ, dir: noDir, pre: file})
	}
	w := &walker{stopped: stopped, dirs: dirs, visit: visit, match: ignore.NewMatcherIn(t.Root, root),
		stack: []pendingDir{{path: t.Path, h: dir}}, pending: 1}
	w.cond.L = &w.mu
	var wg sync.WaitGroup
	for i := range t.workers() {
		wg.Go(func() { w.work(i) })
	}
	wg.Wait()
	w.drain()
	return w.err
}

// pendingDir is a directory waiting to be read: the start directory,
// already open, or a subdirectory to open by name in its parent.
type pendingDir struct {
	path   string
	name   string
	parent *dirRef   // nil for the start directory
	h      dirHandle // the start directory
}

// open opens the directory beneath its parent (never following a
// symlink: a name swapped for one since the parent was listed fails) and
// lets go of the parent.
func (d pendingDir) open() (dirHandle, error) {
	if d.parent == nil {
		return d.h, nil
	}
	defer d.parent.release()
	return d.parent.h.openChild(d.name)
}

// dirRef is an open directory shared by its reader and its subdirectories
// waiting to be opened; the last to let go closes it. With the walk's
// stack, the directories held open are about those on the path from the
// start down to the directory being read, per worker.
type dirRef struct {
	h    dirHandle
	refs atomic.Int32
}

func (r *dirRef) release() {
	if r.refs.Add(-1) == 0 {
		r.h.close()
	}
}

// walker is a shared stack of directories that its goroutines pop from
// and push to; pending counts directories pushed and not yet finished, so
// the walk ends when it reaches zero.
type walker struct {
	stopped *atomic.Bool
	dirs    bool
	visit   visitFunc
	match   *ignore.Matcher

	mu      sync.Mutex
	cond    sync.Cond
	stack   []pendingDir
	pending int
	err     error
}

func (w *walker) work(id int) {
	var l lister
	for {
		d, ok := w.pop()
		if !ok {
			return
		}
		h, err := d.open()
		if err != nil { // gone, unreadable, or no longer a directory
			w.done(nil)
			continue
		}
		ref, files := w.read(&l, d.path, h)
		var verr error
		for _, e := range files {
			if w.stopped.Load() {
				verr = errStopped
				break
			}
			if verr = w.visit(id, e); verr != nil {
				break
			}
		}
		ref.release()
		w.done(verr)
	}
}

// drain lets go of the directories left on the stack by a walk that
// stopped early.
func (w *walker) drain() {
	for _, d := range w.stack {
		if d.parent != nil {
			d.parent.release()
		} else {
			d.h.close()
		}
	}
	w.stack = nil
}

// lister is one goroutine's scratch space for reading directories.
type lister struct {
	buf     []byte
	names   []listed
	subdirs []pendingDir
	files   []Entry
}

type listed struct {
	name string
	typ  fs.FileMode
}

// read lists the open directory h (at path dir) and keeps the entries
// that are neither hidden nor ignored; its subdirectories go on the stack.
// The returned reference holds h open for the visits of the files; the
// files slice is reused by the next read.
func (w *walker) read(l *lister, dir string, h dirHandle) (*dirRef, []Entry) {
	l.names, l.subdirs, l.files = l.names[:0], l.subdirs[:0], l.files[:0]
	ref := &dirRef{h: h}
	if l.buf == nil {
		l.buf = make([]byte, 32<<10)
	}
	var pr ignore.Presence
	err := h.list(l.buf, func(name string, typ fs.FileMode) {
		switch name {
		case ".gitignore":
			pr.Gitignore = true
		case ".ignore":
			pr.Ignore = true
		case ".git":
			pr.Git = true
		}
		if name[0] != '.' { // hidden entries, .git with them, are skipped
			l.names = append(l.names, listed{name, typ})
		}
	})
	if err != nil && len(l.names) == 0 {
		ref.refs.Store(1)
		return ref, nil
	}
	w.match.Prime(dir, pr)
	rules := w.match.Dir(dir)
	for _, e := range l.names {
		isDir := e.typ.IsDir()
		if rules.Match(e.name, isDir) {
			continue
		}
		p := dir + string(filepath.Separator) + e.name
		if isDir {
			l.subdirs = append(l.subdirs, pendingDir{path: p, name: e.name, parent: ref})
			if !w.dirs {
				continue
			}
		}
		l.files = append(l.files, Entry{Path: p, Name: e.name, Type: e.typ, dir: h})
	}
	ref.refs.Store(int32(1 + len(l.subdirs)))
	w.push(l.subdirs)
	return ref, l.files
}

func (w *walker) pop() (pendingDir, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.stack) == 0 && w.pending > 0 && w.err == nil {
		w.cond.Wait()
	}
	if w.err != nil || len(w.stack) == 0 {
		return pendingDir{}, false
	}
	d := w.stack[len(w.stack)-1]
	w.stack = w.stack[:len(w.stack)-1]
	return d, true
}

func (w *walker) push(dirs []pendingDir) {
	if len(dirs) == 0 {
		return
	}
	w.mu.Lock()
	w.stack = append(w.stack, dirs...)
	w.pending += len(dirs)
	w.mu.Unlock()
	w.cond.Broadcast()
}

// done finishes one directory; err, if any, stops the walk.
func (w *walker) done(err error) {
	w.mu.Lock()
	w.pending--
	if err != nil && w.err == nil {
		w.err = err
	}
	wake := w.pending == 0 || w.err != nil
	w.mu.Unlock()
	if wake {
		w.cond.Broadcast()
	}
}
