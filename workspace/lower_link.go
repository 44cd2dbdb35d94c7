package workspace

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// A new cached lower tree is built from the nearest one (the one used
// last): each regular file whose path, mode and blob are the same in
// both is a hard link to the older lower's file, not a new file. A file
// is cheap to link and dear to create (on ext4, ~20× the CPU), and a
// run that lands changes makes a new snapshot tree, so its next run
// needs a new lower that differs from the last one in the files landed.
// A lower is linked from only when its files are the blobs' bytes as
// they are (checked out in Go: lowerRawMark), as the new lower's are;
// and a link is kept only when the file it reaches is the one the older
// lower's index describes (inode, size, modification time and kind):
// else the file is written. Both lowers stay immutable: nothing writes
// a cached lower's files (an overlay copies a file up before anything of
// it changes, and the lowers are read-only in the holder's namespace),
// so the inode the two share never changes but for its link count and
// change time. A link bumps that change time, so the older lower's index
// no longer matches its files' stat data: its worktrees then hash the
// files of the directories they scan (their captures; git's refresh),
// which costs time, never a wrong answer. The new lower's index records
// each file's stat data as linked.

// lowerRawMark is the file of a cached lower that says its files were
// written in Go, each its blob's bytes (lowers/<key>/raw).
const lowerRawMark = "raw"

// linkSource is a cached lower a lower tree being built links files from.
type linkSource struct {
	dir     string                // its tree directory (in the home: trusted)
	entries map[string]indexEntry // its index, by path
	held    *os.File              // its shared lock: not trimmed while linked from
}

// nearestLower opens the cached lower used last, other than key, whose
// files are its blobs' bytes, to link from (nil when there is none).
func (r *Repo) nearestLower(key string, idLen int) *linkSource {
	entries, err := os.ReadDir(r.lowersDir())
	if err != nil {
		return nil
	}
	type aged struct {
		name string
		at   int64
	}
	var all []aged
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && e.IsDir() && e.Name() != key && !strings.HasPrefix(e.Name(), ".") {
			all = append(all, aged{e.Name(), fi.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(all, func(a, b aged) int { return int(min(max(b.at-a.at, -1), 1)) })
	for _, a := range all {
		if src := r.openLinkSource(a.name, idLen); src != nil {
			return src
		}
	}
	return nil
}

// openLinkSource opens the cached lower name to link from, or nil.
func (r *Repo) openLinkSource(name string, idLen int) *linkSource {
	dir := filepath.Join(r.lowersDir(), name)
	if _, err := os.Lstat(filepath.Join(dir, lowerRawMark)); err != nil {
		return nil
	}
	f, err := openLower(r.lowersDir(), name)
	if err != nil {
		return nil
	}
	idx, err := readIndexFile(filepath.Join(dir, "index"), idLen)
	if err != nil {
		f.Close()
		return nil
	}
	src := &linkSource{dir: filepath.Join(dir, "tree"), entries: make(map[string]indexEntry, len(idx.entries)), held: f}
	for _, e := range idx.entries {
		src.entries[e.path] = e
	}
	return src
}

// close lets go of the source's lock.
func (s *linkSource) close() {
	if s != nil {
		s.held.Close()
	}
}

// linkDirs opens the source's directory dir and the new tree's (at
// to), for linkFile; nil, nil when either cannot be opened.
func (s *linkSource) linkDirs(to, dir string) (from, into *dirFD) {
	if s == nil {
		return nil, nil
	}
	from, err := openBeneath(s.dir, dir, false)
	if err != nil {
		return nil, nil
	}
	if into, err = openBeneath(to, dir, false); err != nil {
		from.close()
		return nil, nil
	}
	return from, into
}

// linkFile makes name in into (the file f of the new tree, blob id) a
// hard link to the source's file of that path in from when the source
// has it with the same mode and blob, unchanged since its index was
// written; ok false when it did not (nothing is left behind).
func (s *linkSource) linkFile(from, into *dirFD, name string, f treeFile, id []byte) (indexStat, bool) {
	old, ok := s.entries[f.path]
	if !ok || f.mode == 0o120000 || old.mode != f.mode || !bytes.Equal(old.id, id) {
		return indexStat{}, false
	}
	if err := unix.Linkat(from.fd(), name, into.fd(), name, 0); err != nil {
		return indexStat{}, false
	}
	st, err := lstatIn(into.f, "", name)
	same := err == nil && st.mode&unix.S_IFMT == unix.S_IFREG && (st.mode&0o100 != 0) == (f.mode == 0o100755) &&
		st.st.ino == old.stat.ino && st.st.size == old.stat.size && st.st.mtimeSec == old.stat.mtimeSec &&
		st.st.mtimeNsec == old.stat.mtimeNsec
	if !same {
		if err := unix.Unlinkat(into.fd(), name, 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return indexStat{}, false
		}
		return indexStat{}, false
	}
	return st.st, true
}
