package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
)

// errNested is returned when a directory of the worktree holds a .git of
// its own (a repository inside), which git adds as a submodule.
var errNested = errors.New("a nested repository")

// delta is a path whose file differs from the manifest's.
type delta struct {
	path  string
	mode  uint32 // 0: deleted
	id    []byte // nil for a file over the limit (not hashed)
	link  []byte // a symlink's target (a capture stores it)
	bytes int64  // a regular file's size
	over  bool   // a capture's file over the manifest's limit: not hashed, not carried
}

// freshEntry is a path the manifest does not track whose parent it does:
// a new file or the top of a new directory (ignored or not; the walk
// does not enter a new directory).
type freshEntry struct {
	path string
	dir  bool
}

// scanResult is how a worktree differs from its manifest.
type scanResult struct {
	deltas   []delta      // tracked files changed or gone, hashed
	fresh    []freshEntry // new top-most entries
	rehashed int          // tracked files whose stat data was not trusted, contents the same
}

// scan compares the worktree at top with m: one lstat per entry of the
// directories that hold tracked files, a read and a hash per file whose
// stat data differs from the manifest's or is racy. keep (a capture)
// keeps the contents of changed files in the deltas and stops at what
// git would add differently (attributes, a nested repository); without
// it (a restore) those are new entries like any other.
func (m *manifest) scan(top string, keep bool) (*scanResult, error) {
	// Syscalls are most of a scan's cost, and they run in parallel.
	workers := min(runtime.GOMAXPROCS(0), 4)
	s := &scanner{m: m, top: top, keep: keep, sem: make(chan struct{}, workers-1)}
	s.dir("", m.root)
	s.wg.Wait()
	if s.err != nil {
		return nil, fmt.Errorf("scan worktree: %w", s.err)
	}
	return &s.res, nil
}

// scanner is one scan under way: directories are scanned on up to four
// goroutines, each result merged under mu.
type scanner struct {
	m    *manifest
	top  string
	keep bool
	sem  chan struct{} // a token per extra goroutine
	wg   sync.WaitGroup

	mu  sync.Mutex
	res scanResult
	err error
}

// dir scans the directory rel of the manifest, d: on a goroutine of its
// own when a token is free, else on the caller's.
func (s *scanner) dir(rel string, d *mdir) {
	select {
	case s.sem <- struct{}{}:
		s.wg.Go(func() {
			defer func() { <-s.sem }()
			s.scanDir(rel, d)
		})
	default:
		s.scanDir(rel, d)
	}
}

// scanDir scans the directory rel (slash-separated, "" at the top) that
// the manifest holds as d; its subdirectories are scanned only once
// lstat has shown them to be directories (not symlinks).
func (s *scanner) scanDir(rel string, d *mdir) {
	if rel != "" && s.m.untouched != nil && s.m.untouched(rel) {
		return
	}
	var res scanResult
	subs, err := s.m.scanEntries(s.top, rel, d, &res, s.keep)
	s.mu.Lock()
	s.res.deltas = append(s.res.deltas, res.deltas...)
	s.res.fresh = append(s.res.fresh, res.fresh...)
	s.res.rehashed += res.rehashed
	if err != nil && s.err == nil {
		s.err = err
	}
	failed := s.err != nil
	s.mu.Unlock()
	if failed {
		return
	}
	for _, sub := range subs {
		s.dir(sub.path, sub.d)
	}
}

// subdir is a tracked directory a scan found to be one still.
type subdir struct {
	path string
	d    *mdir
}

// scanEntries scans the entries of directory rel, d, and returns its
// tracked subdirectories, left for the caller to scan.
func (m *manifest) scanEntries(top, rel string, d *mdir, res *scanResult, keep bool) ([]subdir, error) {
	abs := filepath.Join(top, filepath.FromSlash(rel))
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var subs []subdir
	seen := make([]bool, len(d.ents))
	for _, name := range names {
		if name == ".git" && rel == "" {
			continue
		}
		p := path.Join(rel, name)
		if name == ".git" && keep { // a restore removes it as any new entry
			return nil, fmt.Errorf("%w: %s", errNested, rel)
		}
		st, err := lstatIn(f, abs, name) // relative to the open directory: no walk of the path per entry
		if errors.Is(err, fs.ErrNotExist) {
			continue // gone meanwhile
		}
		if err != nil {
			return nil, err
		}
		isDir := st.mode&syscall.S_IFMT == syscall.S_IFDIR
		i, tracked := d.byName[name]
		switch {
		case !tracked:
			if name == ".gitattributes" && keep { // a restore removes it
				return nil, fmt.Errorf("%w: %s", errAttributes, p)
			}
			res.fresh = append(res.fresh, freshEntry{path: p, dir: isDir})
		case d.ents[i].isDir() && isDir:
			seen[i] = true
			subs = append(subs, subdir{path: p, d: d.ents[i].sub})
		case d.ents[i].isDir() || isDir: // a file in a directory's place, or the other way
			res.fresh = append(res.fresh, freshEntry{path: p, dir: isDir})
		default:
			seen[i] = true
			if err := m.compare(filepath.Join(abs, name), p, &d.ents[i], st, res, keep); err != nil {
				return nil, err
			}
		}
	}
	for i := range d.ents {
		if !seen[i] {
			gone(path.Join(rel, d.ents[i].name), &d.ents[i], res)
		}
	}
	return subs, nil
}

// gone records e, a file or a directory of files at p, as deleted.
func gone(p string, e *mentry, res *scanResult) {
	if !e.isDir() {
		res.deltas = append(res.deltas, delta{path: p})
		return
	}
	for i := range e.sub.ents {
		gone(p+"/"+e.sub.ents[i].name, &e.sub.ents[i], res)
	}
}

// compare checks the tracked file p (at abs, lstat st) against its entry
// e: trusted when its mode and stat data match and the entry is older
// than the index; hashed otherwise.
func (m *manifest) compare(abs, p string, e *mentry, st fileStat, res *scanResult, keep bool) error {
	mode, err := fileMode(st.mode, p)
	if err != nil {
		return err
	}
	if m.anyDev {
		st.st.dev = e.stat.dev
	}
	if mode == e.mode && st.st == e.stat && m.older(e.stat) {
		return nil
	}
	if keep && mode != 0o120000 && m.limit > 0 && st.bytes > m.limit {
		res.deltas = append(res.deltas, delta{path: p, mode: mode, bytes: st.bytes, over: true})
		return nil
	}
	d, err := m.hashDelta(abs, p, mode)
	if err != nil {
		return err
	}
	if mode == e.mode && bytes.Equal(d.id, e.id) {
		res.rehashed++
		return nil
	}
	res.deltas = append(res.deltas, d)
	return nil
}

// hashDelta hashes the file p at abs, whose git mode is mode: a
// symlink's target read whole (and kept), a regular file in pieces.
func (m *manifest) hashDelta(abs, p string, mode uint32) (delta, error) {
	d := delta{path: p, mode: mode}
	var err error
	if mode == 0o120000 {
		var target string
		target, err = os.Readlink(abs)
		d.link = []byte(target)
		d.id = objectID(m.idLen, "blob", d.link)
	} else {
		d.id, err = hashBlobFile(abs, m.idLen)
	}
	return d, err
}

// older reports whether an entry's mtime is strictly earlier than the
// index file's: only then may its stat data be trusted.
func (m *manifest) older(s indexStat) bool {
	return int64(s.mtimeSec) < m.idxS || (int64(s.mtimeSec) == m.idxS && int64(s.mtimeNsec) < m.idxNS)
}

// fileMode is the git mode of a file whose st_mode is mode, as git adds
// it: only the owner's execute bit counts.
func fileMode(mode uint32, p string) (uint32, error) {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		if mode&0o100 != 0 {
			return 0o100755, nil
		}
		return 0o100644, nil
	case syscall.S_IFLNK:
		return 0o120000, nil
	}
	return 0, fmt.Errorf("%s: not a file, directory or symlink", p)
}
