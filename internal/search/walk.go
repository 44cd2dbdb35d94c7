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
	// means one per CPU.
	Workers int
}

// Entry is one path found by the walk.
type Entry struct {
	Path string      // absolute
	Name string      // base name
	Type fs.FileMode // type bits only: 0 for a regular file, fs.ModeDir, fs.ModeSymlink, ...
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
		return visit(0, Entry{Path: t.Path, Name: filepath.Base(t.Path), Type: fi.Mode().Type()})
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
	var subdirs []string
	var files []Entry
	for {
		dir, ok := w.pop()
		if !ok {
			return
		}
		subdirs, files = w.read(dir, subdirs[:0], files[:0])
		w.push(subdirs)
		var err error
		if w.stopped.Load() {
			err = errStopped
		}
		for _, e := range files {
			if err != nil {
				break
			}
			if w.stopped.Load() {
				err = errStopped
				break
			}
			err = w.visit(id, e)
		}
		w.done(err)
	}
}

// read lists dir, keeping the entries that are neither hidden nor ignored.
func (w *walker) read(dir string, subdirs []string, files []Entry) ([]string, []Entry) {
	f, err := os.Open(dir)
	if err != nil {
		return subdirs, files
	}
	ents, _ := f.ReadDir(-1)
	f.Close()
	for _, de := range ents {
		name := de.Name()
		if name[0] == '.' {
			continue // hidden; .git with it
		}
		p := dir + string(filepath.Separator) + name
		typ := de.Type()
		if w.match.Match(p, typ.IsDir()) {
			continue
		}
		if typ.IsDir() {
			subdirs = append(subdirs, p)
			if !w.dirs {
				continue
			}
		}
		files = append(files, Entry{Path: p, Name: name, Type: typ})
	}
	return subdirs, files
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
