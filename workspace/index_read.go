package workspace

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	be "encoding/binary"
	"errors"
	"fmt"
	"hash"
	"os"
	"strings"
)

// errIndex is returned for a git index file the reader does not take:
// another version, a malformed file, or entries it cannot vouch for
// (conflicts, skip-worktree, intent-to-add, assume-unchanged, a split or
// sparse index). The caller then leaves the work to git.
var errIndex = errors.New("index not readable in Go")

// gitIndex is a git index file's entries, sorted by path as git keeps
// them, and the index file's own modification time (for git's racy
// rule: an entry's stat is trusted only when it is older than the index).
type gitIndex struct {
	entries   []indexEntry
	mtimeSec  int64
	mtimeNsec int64
	sum       []byte // the file's trailing checksum
	size      int64
	ino       uint64
}

// readIndexFile reads the index file at path, whose object IDs are idLen
// bytes (20: SHA-1, 32: SHA-256).
func readIndexFile(path string, idLen int) (*gitIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read index: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read index: %w", err)
	}
	data := make([]byte, info.Size())
	if _, err := readFull(f, data); err != nil {
		return nil, fmt.Errorf("read index: %w", err)
	}
	idx, err := parseIndex(data, idLen)
	if err != nil {
		return nil, err
	}
	mt := info.ModTime()
	idx.mtimeSec, idx.mtimeNsec = mt.Unix(), int64(mt.Nanosecond())
	idx.size, idx.ino = info.Size(), inode(info)
	return idx, nil
}

// readFull fills b from f.
func readFull(f *os.File, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := f.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// newHash is the object hash of IDs idLen bytes long.
func newHash(idLen int) hash.Hash {
	if idLen == sha256.Size {
		return sha256.New()
	}
	return sha1.New()
}

// Index entry flags.
const (
	flagAssumeValid = 0x8000
	flagExtended    = 0x4000
	flagStage       = 0x3000
	flagNameMask    = 0x0fff
)

// parseIndex reads the contents of an index file: header "DIRC", version
// 2 or 3, entries, optional extensions (skipped), and the checksum of
// all that, which must match.
func parseIndex(data []byte, idLen int) (*gitIndex, error) {
	if idLen != sha1.Size && idLen != sha256.Size {
		return nil, fmt.Errorf("%w: ID length %d", errIndex, idLen)
	}
	if len(data) < 12+idLen || string(data[:4]) != "DIRC" {
		return nil, fmt.Errorf("%w: no index header", errIndex)
	}
	body, sum := data[:len(data)-idLen], data[len(data)-idLen:]
	h := newHash(idLen)
	h.Write(body)
	if !bytes.Equal(h.Sum(nil), sum) {
		return nil, fmt.Errorf("%w: bad checksum", errIndex)
	}
	version := be.BigEndian.Uint32(body[4:])
	if version != 2 && version != 3 {
		return nil, fmt.Errorf("%w: version %d", errIndex, version)
	}
	n := be.BigEndian.Uint32(body[8:])
	if uint64(n) > uint64(len(body))/40 {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", errIndex, n, len(body))
	}
	idx := &gitIndex{entries: make([]indexEntry, 0, n), sum: bytes.Clone(sum)}
	rest := body[12:]
	for i := uint32(0); i < n; i++ {
		e, size, err := parseIndexEntry(rest, idLen, version)
		if err != nil {
			return nil, err
		}
		if k := len(idx.entries); k > 0 && idx.entries[k-1].path >= e.path {
			return nil, fmt.Errorf("%w: entries out of order at %q", errIndex, e.path)
		}
		idx.entries = append(idx.entries, e)
		rest = rest[size:]
	}
	return idx, checkExtensions(rest)
}

// parseIndexEntry reads the entry at the start of b and returns it and
// its size on disk (padded to a multiple of 8).
func parseIndexEntry(b []byte, idLen int, version uint32) (indexEntry, int, error) {
	fixed := 40 + idLen + 2
	if len(b) < fixed {
		return indexEntry{}, 0, fmt.Errorf("%w: truncated entry", errIndex)
	}
	u := func(i int) uint32 { return be.BigEndian.Uint32(b[4*i:]) }
	e := indexEntry{
		stat: indexStat{ctimeSec: u(0), ctimeNsec: u(1), mtimeSec: u(2), mtimeNsec: u(3), dev: u(4), ino: u(5),
			uid: u(7), gid: u(8), size: u(9)},
		mode: u(6),
		id:   b[40 : 40+idLen],
	}
	flags := be.BigEndian.Uint16(b[40+idLen:])
	if flags&(flagAssumeValid|flagStage) != 0 {
		return indexEntry{}, 0, fmt.Errorf("%w: entry flags %#x", errIndex, flags)
	}
	if flags&flagExtended != 0 {
		if version < 3 || len(b) < fixed+2 {
			return indexEntry{}, 0, fmt.Errorf("%w: extended flags", errIndex)
		}
		if ext := be.BigEndian.Uint16(b[fixed:]); ext != 0 { // skip-worktree, intent-to-add, or unknown
			return indexEntry{}, 0, fmt.Errorf("%w: extended flags %#x", errIndex, ext)
		}
		fixed += 2
	}
	nul := bytes.IndexByte(b[fixed:], 0)
	if nul <= 0 {
		return indexEntry{}, 0, fmt.Errorf("%w: unterminated name", errIndex)
	}
	if l := int(flags & flagNameMask); l != min(nul, flagNameMask) {
		return indexEntry{}, 0, fmt.Errorf("%w: name length %d, flags say %d", errIndex, nul, l)
	}
	size := (fixed + nul + 8) &^ 7
	if len(b) < size {
		return indexEntry{}, 0, fmt.Errorf("%w: truncated entry", errIndex)
	}
	e.path = string(b[fixed : fixed+nul])
	if !validIndexPath(e.path) {
		return indexEntry{}, 0, fmt.Errorf("%w: bad path %q", errIndex, e.path)
	}
	switch e.mode {
	case 0o100644, 0o100755, 0o120000, 0o160000:
	default:
		return indexEntry{}, 0, fmt.Errorf("%w: mode %o of %q", errIndex, e.mode, e.path)
	}
	e.id = bytes.Clone(e.id)
	return e, size, nil
}

// validIndexPath reports whether p is a path git would record: relative,
// slash-separated, no empty, "." or ".." component, no ".git" component.
func validIndexPath(p string) bool {
	for c := range strings.SplitSeq(p, "/") {
		if c == "" || c == "." || c == ".." || strings.EqualFold(c, ".git") {
			return false
		}
	}
	return true
}

// checkExtensions walks the extensions after the entries: optional ones
// (signature starting with A-Z) are skipped; a mandatory one (a split or
// sparse index) means the entries are not the whole story.
func checkExtensions(b []byte) error {
	for len(b) > 0 {
		if len(b) < 8 {
			return fmt.Errorf("%w: truncated extension", errIndex)
		}
		if b[0] < 'A' || b[0] > 'Z' {
			return fmt.Errorf("%w: mandatory extension %q", errIndex, b[:4])
		}
		n := be.BigEndian.Uint32(b[4:])
		if uint64(n) > uint64(len(b)-8) {
			return fmt.Errorf("%w: truncated extension %q", errIndex, b[:4])
		}
		b = b[8+int(n):]
	}
	return nil
}
