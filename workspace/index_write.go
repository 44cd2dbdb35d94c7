package workspace

import (
	"bufio"
	"crypto/sha1"
	"crypto/sha256"
	endian "encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
)

// indexEntry is one entry of a git index (stage 0): a path, its mode
// and blob, and the stat data git compares the file with to know it is
// unchanged without reading it.
type indexEntry struct {
	path string
	mode uint32 // 0o100644, 0o100755 or 0o120000
	id   []byte // the blob's ID, raw (20 bytes, or 32 in a sha256 repository)
	stat indexStat
}

// indexStat is the stat data an index entry records, each field cut to
// 32 bits as git cuts it.
type indexStat struct {
	ctimeSec, ctimeNsec uint32
	mtimeSec, mtimeNsec uint32
	dev, ino            uint32
	uid, gid            uint32
	size                uint32
}

// statOf is the index's stat data of a file as lstat (or fstat) gave it.
func statOf(fi os.FileInfo) (indexStat, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return indexStat{}, errors.New("read file status: no stat data")
	}
	return indexStat{
		ctimeSec: uint32(st.Ctim.Sec), ctimeNsec: uint32(st.Ctim.Nsec),
		mtimeSec: uint32(st.Mtim.Sec), mtimeNsec: uint32(st.Mtim.Nsec),
		dev: uint32(st.Dev), ino: uint32(st.Ino),
		uid: st.Uid, gid: st.Gid,
		size: uint32(st.Size),
	}, nil
}

// indexNameMax is the largest name length an entry's flags hold; longer
// names record it and are found by their NUL.
const indexNameMax = 0xFFF

// encodeIndex writes a version 2 index of es to out: the header, the
// entries sorted by path bytes as git sorts them, no extensions, and the
// checksum of all that (SHA-1, or SHA-256 when the IDs are 32 bytes).
func encodeIndex(out io.Writer, es []indexEntry) error {
	idLen := 20
	if len(es) > 0 {
		idLen = len(es[0].id)
	}
	var sum hash.Hash
	switch idLen {
	case 20:
		sum = sha1.New()
	case 32:
		sum = sha256.New()
	default:
		return fmt.Errorf("write index: bad object ID length %d", idLen)
	}
	sorted := slices.IsSortedFunc(es, func(a, b indexEntry) int { return strings.Compare(a.path, b.path) })
	if !sorted {
		es = slices.Clone(es)
		slices.SortFunc(es, func(a, b indexEntry) int { return strings.Compare(a.path, b.path) })
	}
	w := bufio.NewWriterSize(io.MultiWriter(out, sum), 64<<10)
	head := make([]byte, 0, 12)
	head = append(head, "DIRC"...)
	head = endian.BigEndian.AppendUint32(head, 2)
	head = endian.BigEndian.AppendUint32(head, uint32(len(es)))
	w.Write(head)
	buf := make([]byte, 0, 256)
	for i, e := range es {
		if len(e.id) != idLen {
			return fmt.Errorf("write index: %s: bad object ID length %d", e.path, len(e.id))
		}
		if e.path == "" || strings.IndexByte(e.path, 0) >= 0 || (i > 0 && es[i-1].path == e.path) {
			return fmt.Errorf("write index: bad or repeated path %q", e.path)
		}
		buf = appendIndexEntry(buf[:0], e)
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	if _, err := out.Write(sum.Sum(nil)); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	return nil
}

// appendIndexEntry appends e as a version 2 index entry: ten 32-bit stat
// and mode fields, the ID, 16 bits of flags (stage 0 and the name's
// length), the name and 1 to 8 NULs, so the entry's length is a multiple
// of 8.
func appendIndexEntry(buf []byte, e indexEntry) []byte {
	start := len(buf)
	for _, v := range [...]uint32{
		e.stat.ctimeSec, e.stat.ctimeNsec, e.stat.mtimeSec, e.stat.mtimeNsec,
		e.stat.dev, e.stat.ino, e.mode, e.stat.uid, e.stat.gid, e.stat.size,
	} {
		buf = endian.BigEndian.AppendUint32(buf, v)
	}
	buf = append(buf, e.id...)
	buf = endian.BigEndian.AppendUint16(buf, uint16(min(len(e.path), indexNameMax)))
	buf = append(buf, e.path...)
	n := len(buf) - start
	pad := (n+8)&^7 - n
	for range pad {
		buf = append(buf, 0)
	}
	return buf
}

// writeIndexFile writes es as the index file path, as git does: to
// path.lock, created exclusively (an index.lock that exists means a git
// command holds the index), then renamed over path.
func writeIndexFile(path string, es []indexEntry) error {
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	err = encodeIndex(f, es)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write index: %w", cerr)
	}
	if err == nil {
		if rerr := os.Rename(lock, path); rerr != nil {
			err = fmt.Errorf("write index: %w", rerr)
		}
	}
	if err != nil {
		os.Remove(lock)
	}
	return err
}
