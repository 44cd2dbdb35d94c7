package search

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
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
	// Workers bounds the goroutines reading directories and files; zero
	// means one per CPU (GOMAXPROCS), at least two.
	Workers int
}

// Entry is one path found by the walk.
type Entry struct {
	Path string      // absolute
	Name string      // base name
	Type fs.FileMode // type bits only: 0 for a regular file, fs.ModeDir, fs.ModeSymlink, ...
	dir  dirHandle   // the open directory holding it, valid during the visit
}

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
	fi, err := os.Stat(t.Path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return visit(0, Entry{Path: t.Path, Name: filepath.Base(t.Path), Type: fi.Mode().Type(), dir: noDir})
	}
	w := &walker{stopped: stopped, dirs: dirs, visit: visit, match: ignore.NewMatcher(t.Root),
		stack: []string{t.Path}, pending: 1}
	w.cond.L = &w.mu
	var wg sync.WaitGroup
	for i := range t.workers() {
		wg.Go(func() { w.work(i) })
	}
	wg.Wait()
	return w.err
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
	stack   []string
	pending int
	err     error
}

func (w *walker) work(id int) {
	var l lister
	for {
		dir, ok := w.pop()
		if !ok {
			return
		}
		h, subdirs, files := w.read(&l, dir)
		w.push(subdirs)
		var err error
		for _, e := range files {
			if w.stopped.Load() {
				err = errStopped
				break
			}
			if err = w.visit(id, e); err != nil {
				break
			}
		}
		h.close()
		w.done(err)
	}
}

// lister is one goroutine's scratch space for reading directories.
type lister struct {
	buf     []byte
	names   []listed
	subdirs []string
	files   []Entry
}

type listed struct {
	name string
	typ  fs.FileMode
}

// read lists dir and keeps the entries that are neither hidden nor
// ignored. The returned handle stays open for the visits of the files; the
// slices are reused by the next read.
func (w *walker) read(l *lister, dir string) (dirHandle, []string, []Entry) {
	l.names, l.subdirs, l.files = l.names[:0], l.subdirs[:0], l.files[:0]
	h, err := openDir(dir)
	if err != nil {
		return noDir, nil, nil
	}
	if l.buf == nil {
		l.buf = make([]byte, 32<<10)
	}
	var pr ignore.Presence
	err = h.list(l.buf, func(name string, typ fs.FileMode) {
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
		h.close()
		return noDir, nil, nil
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
			l.subdirs = append(l.subdirs, p)
			if !w.dirs {
				continue
			}
		}
		l.files = append(l.files, Entry{Path: p, Name: e.name, Type: e.typ, dir: h})
	}
	return h, l.subdirs, l.files
}

func (w *walker) pop() (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.stack) == 0 && w.pending > 0 && w.err == nil {
		w.cond.Wait()
	}
	if w.err != nil || len(w.stack) == 0 {
		return "", false
	}
	d := w.stack[len(w.stack)-1]
	w.stack = w.stack[:len(w.stack)-1]
	return d, true
}

func (w *walker) push(dirs []string) {
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
