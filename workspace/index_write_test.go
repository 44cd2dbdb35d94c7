package workspace

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestIndexOfALongPathReadsBack(t *testing.T) {
	root := newRepo(t, map[string]string{"a": "a\n"})
	id := sh(t, root, "rev-parse", "HEAD:a")
	raw, err := rawID(id)
	must(t, err)
	long := strings.Repeat("d/", 2100) + "f" // 4201 bytes: flags hold 0xFFF
	var es []indexEntry
	for _, p := range []string{"z", long, "a.b", "a/b", "a0", strings.Repeat("n", 7)} {
		es = append(es, indexEntry{path: p, mode: 0o100644, id: raw, stat: indexStat{size: 2}})
	}
	idx := filepath.Join(t.TempDir(), "index")
	must(t, writeIndexFile(idx, es, len(raw)))
	out, err := (git{dir: root, index: idx, discover: true}).run(t.Context(), nil, "ls-files", "-z")
	must(t, err)
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	want := []string{"a.b", "a/b", "a0", long, strings.Repeat("n", 7), "z"}
	if !slices.Equal(got, want) {
		t.Errorf("git reads paths %.80q, want %.80q", got, want)
	}
	data, err := os.ReadFile(idx)
	must(t, err)
	if !bytes.HasPrefix(data, []byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x06")) {
		t.Errorf("header %q", data[:12])
	}
}

func TestEmptyIndexHasTheRepositorysChecksum(t *testing.T) {
	for _, idLen := range []int{20, 32} {
		var buf bytes.Buffer
		must(t, encodeIndex(&buf, nil, idLen))
		head := "DIRC\x00\x00\x00\x02\x00\x00\x00\x00"
		var sum []byte
		if idLen == 20 {
			s := sha1.Sum([]byte(head))
			sum = s[:]
		} else {
			s := sha256.Sum256([]byte(head))
			sum = s[:]
		}
		if want := head + string(sum); buf.String() != want {
			t.Errorf("empty index for %d-byte IDs: %x, want %x", idLen, buf.Bytes(), want)
		}
	}
}
