package workspace

import (
	"bytes"
	be "encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// encodeTestIndex writes entries as an index file of the given version
// (test side of the reader; ext is appended as extension data).
func encodeTestIndex(es []indexEntry, version uint32, idLen int, extFlags uint16, ext []byte) []byte {
	var b bytes.Buffer
	b.WriteString("DIRC")
	be.Write(&b, be.BigEndian, version)
	be.Write(&b, be.BigEndian, uint32(len(es)))
	for _, e := range es {
		start := b.Len()
		s := e.stat
		for _, v := range []uint32{s.ctimeSec, s.ctimeNsec, s.mtimeSec, s.mtimeNsec, s.dev, s.ino, e.mode, s.uid, s.gid, s.size} {
			be.Write(&b, be.BigEndian, v)
		}
		b.Write(e.id)
		flags := uint16(min(len(e.path), flagNameMask))
		if extFlags != 0 {
			flags |= flagExtended
		}
		be.Write(&b, be.BigEndian, flags)
		if extFlags != 0 {
			be.Write(&b, be.BigEndian, extFlags)
		}
		b.WriteString(e.path)
		for pad := 8 - (b.Len()-start)%8; pad > 0; pad-- {
			b.WriteByte(0)
		}
	}
	b.Write(ext)
	h := newHash(idLen)
	h.Write(b.Bytes())
	return h.Sum(b.Bytes())
}

func testEntries(idLen int) []indexEntry {
	var es []indexEntry
	for i, p := range []string{"a-b", "a.txt", "a/b/c", "a/x", "a0", strings.Repeat("long/", 900) + "f"} {
		es = append(es, indexEntry{path: p, mode: 0o100644, id: bytes.Repeat([]byte{byte(i + 1)}, idLen),
			stat: indexStat{ctimeSec: 1, ctimeNsec: 2, mtimeSec: 3, mtimeNsec: 4, dev: 5, ino: uint32(6 + i), uid: 7, gid: 8, size: 9}})
	}
	return es
}

func TestIndexReaderReadsWhatItWasGiven(t *testing.T) {
	for _, idLen := range []int{20, 32} {
		es := testEntries(idLen)
		for _, version := range []uint32{2, 3} {
			data := encodeTestIndex(es, version, idLen, 0, []byte("TREE\x00\x00\x00\x02ab"))
			idx, err := parseIndex(data, idLen)
			if err != nil {
				t.Fatalf("id %d v%d: %v", idLen, version, err)
			}
			if fmt.Sprint(idx.entries) != fmt.Sprint(es) {
				t.Errorf("id %d v%d: read %v, want %v", idLen, version, idx.entries, es)
			}
		}
	}
	es := testEntries(20)
	for name, data := range map[string][]byte{
		"version 4":         encodeTestIndex(es, 4, 20, 0, nil),
		"intent to add":     encodeTestIndex(es, 3, 20, 0x2000, nil),
		"extended in v2":    encodeTestIndex(es, 2, 20, 0x2000, nil),
		"split index":       encodeTestIndex(es, 2, 20, 0, []byte("link\x00\x00\x00\x00")),
		"truncated ext":     encodeTestIndex(es, 2, 20, 0, []byte("TREE\x00\x00\x01\x00")),
		"bad checksum":      append(encodeTestIndex(es, 2, 20, 0, nil)[:100], bytes.Repeat([]byte{0}, 20)...),
		"out of order":      encodeTestIndex([]indexEntry{es[1], es[0]}, 2, 20, 0, nil),
		"SHA-1 read as 256": encodeTestIndex(es, 2, 20, 0, nil)[:len(encodeTestIndex(es, 2, 20, 0, nil))-1],
	} {
		if _, err := parseIndex(data, 20); !errors.Is(err, errIndex) {
			t.Errorf("%s: err %v, want errIndex", name, err)
		}
	}
}

// The reader agrees with git about a real index (git ls-files -s).
func TestIndexReaderAgreesWithGit(t *testing.T) {
	root := diffRepo(t)
	idx, err := readIndexFile(filepath.Join(root, ".git", "index"), 20)
	must(t, err)
	var got []string
	for _, e := range idx.entries {
		got = append(got, fmt.Sprintf("%o %s 0\t%s", e.mode, hex.EncodeToString(e.id), e.path))
	}
	if want := sh(t, root, "ls-files", "-s"); strings.Join(got, "\n") != want {
		t.Errorf("read\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
	sh(t, root, "update-index", "--index-version", "4")
	if _, err := readIndexFile(filepath.Join(root, ".git", "index"), 20); !errors.Is(err, errIndex) {
		t.Errorf("version 4 read: %v", err)
	}
}

// FuzzParseIndex: any index body, sealed with its checksum so the parser
// reads past it, gives entries or an error, never a panic; entries have
// valid, sorted paths and IDs of the length asked.
func FuzzParseIndex(f *testing.F) {
	body := func(idLen int, data []byte) []byte { return data[:len(data)-idLen] }
	f.Add(body(20, encodeTestIndex(testEntries(20), 2, 20, 0, []byte("TREE\x00\x00\x00\x00"))), 20)
	f.Add(body(32, encodeTestIndex(testEntries(32), 3, 32, 0, nil)), 32)
	f.Add(body(20, encodeTestIndex(testEntries(20)[:1], 3, 20, 0x4000, nil)), 20)
	f.Fuzz(func(t *testing.T, data []byte, idLen int) {
		if idLen != 20 && idLen != 32 {
			idLen = 20
		}
		h := newHash(idLen)
		h.Write(data)
		idx, err := parseIndex(h.Sum(bytes.Clone(data)), idLen)
		if err != nil {
			if !errors.Is(err, errIndex) {
				t.Fatalf("error %v is not errIndex", err)
			}
			return
		}
		for i, e := range idx.entries {
			if !validIndexPath(e.path) || len(e.id) != idLen || (i > 0 && idx.entries[i-1].path >= e.path) {
				t.Fatalf("bad entry %d: %+v", i, e)
			}
		}
	})
}

// What the index writer (index_write.go) writes, the reader reads back.
func TestIndexWriterAndReaderAgree(t *testing.T) {
	for _, idLen := range []int{20, 32} {
		es := testEntries(idLen)
		var b bytes.Buffer
		must(t, encodeIndex(&b, es, idLen))
		idx, err := parseIndex(b.Bytes(), idLen)
		must(t, err)
		if fmt.Sprint(idx.entries) != fmt.Sprint(es) {
			t.Errorf("id %d: read %v, want %v", idLen, idx.entries, es)
		}
	}
}
