package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
)

// errNested is returned when a directory of the worktree holds a .git of
// its own (a repository inside), which git adds as a submodule.
var errNested = errors.New("a nested repository")

// delta is a path whose file differs from the manifest's.
type delta struct {
	path string
	mode uint32 // 0: deleted
	id   []byte
	data []byte // the contents, kept for a capture to store
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
// stat data differs from the manifest's or is racy. keep keeps the
// contents of changed files in the deltas.
func (m *manifest) scan(top string, keep bool) (*scanResult, error) {
	res := &scanResult{}
	if err := m.scanDir(top, "", m.root, res, keep); err != nil {
		return nil, fmt.Errorf("scan worktree: %w", err)
	}
	return res, nil
}

// scanDir scans the directory rel (slash-separated, "" at the top) that
// the manifest holds as d.
func (m *manifest) scanDir(top, rel string, d *mdir, res *scanResult, keep bool) error {
	abs := filepath.Join(top, filepath.FromSlash(rel))
	f, err := os.Open(abs)
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	seen := make([]bool, len(d.ents))
	for _, name := range names {
		if name == ".git" {
			if rel == "" {
				continue
			}
			return fmt.Errorf("%w: %s", errNested, rel)
		}
		p := path.Join(rel, name)
		st, err := lstatFile(filepath.Join(abs, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // gone meanwhile
		}
		if err != nil {
			return err
		}
		isDir := st.mode&syscall.S_IFMT == syscall.S_IFDIR
		i, tracked := d.byName[name]
		switch {
		case !tracked:
			if name == ".gitattributes" {
				return fmt.Errorf("%w: %s", errAttributes, p)
			}
			res.fresh = append(res.fresh, freshEntry{path: p, dir: isDir})
		case d.ents[i].isDir() && isDir:
			seen[i] = true
			if err := m.scanDir(top, p, d.ents[i].sub, res, keep); err != nil {
				return err
			}
		case d.ents[i].isDir() || isDir: // a file in a directory's place, or the other way
			res.fresh = append(res.fresh, freshEntry{path: p, dir: isDir})
		default:
			seen[i] = true
			if err := m.compare(filepath.Join(abs, name), p, &d.ents[i], st, res, keep); err != nil {
				return err
			}
		}
	}
	for i := range d.ents {
		if !seen[i] {
			gone(path.Join(rel, d.ents[i].name), &d.ents[i], res)
		}
	}
	return nil
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
	if mode == e.mode && st.st == e.stat && m.older(e.stat) {
		return nil
	}
	data, err := readContent(abs, mode)
	if err != nil {
		return err
	}
	id := objectID(m.idLen, "blob", data)
	if mode == e.mode && bytes.Equal(id, e.id) {
		res.rehashed++
		return nil
	}
	d := delta{path: p, mode: mode, id: id}
	if keep {
		d.data = data
	}
	res.deltas = append(res.deltas, d)
	return nil
}

// older reports whether an entry's mtime is strictly earlier than the
// index file's: only then may its stat data be trusted.
func (m *manifest) older(s indexStat) bool {
	return int64(s.mtimeS) < m.idxS || (int64(s.mtimeS) == m.idxS && int64(s.mtimeNS) < m.idxNS)
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

// readContent reads what git stores of the file at abs: its contents, or
// a symlink's target.
func readContent(abs string, mode uint32) ([]byte, error) {
	if mode == 0o120000 {
		target, err := os.Readlink(abs)
		return []byte(target), err
	}
	return os.ReadFile(abs)
}
