package workspace

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParseTree: any bytes read as a tree object give entries or an
// error, never a panic; an entry has a name and an ID of the length asked.
func FuzzParseTree(f *testing.F) {
	f.Add([]byte("100644 a.txt\x00"+strings.Repeat("\x01", 20)+"40000 dir\x00"+strings.Repeat("\x02", 20)), 20)
	f.Add([]byte("120000 link\x00"+strings.Repeat("\xff", 32)), 32)
	f.Add([]byte("100664 old mode\x00"+strings.Repeat("\x00", 20)), 20)
	f.Fuzz(func(t *testing.T, data []byte, idLen int) {
		if idLen != 20 && idLen != 32 {
			return
		}
		es, err := parseTree(data, idLen)
		if err != nil {
			return
		}
		for _, e := range es {
			if e.name == "" || strings.ContainsRune(e.name, 0) || len(e.id) != 2*idLen {
				t.Fatalf("bad entry %+v", e)
			}
			if _, err := canonicalMode(e.mode); err != nil {
				t.Fatalf("entry mode %q is not canonical: %v", e.mode, err)
			}
		}
	})
}

// FuzzParseDiffTree: any diff-tree output gives files and a patch that
// is the output's tail, never a panic.
func FuzzParseDiffTree(f *testing.F) {
	f.Add([]byte(":100644 100644 aaaa bbbb M\x00a.txt\x00:000000 100644 0000 cccc A\x00b.bin\x001\t1\ta.txt\x00-\t-\tb.bin\x00\x00diff --git a/a.txt b/a.txt\n"))
	f.Add([]byte(":\x00\x00\x00"))
	f.Add([]byte(":1 2 3 4 M\x00p\x00-5\t-1\tp\x00"))
	f.Fuzz(func(t *testing.T, out []byte) {
		files, patch := parseDiffTree(out)
		if len(patch) > 0 && !bytes.HasSuffix(out, patch) {
			t.Fatalf("patch %q is not the output's tail", patch)
		}
		for _, fc := range files {
			if fc.Added < 0 || fc.Deleted < 0 {
				t.Fatalf("bad counts %+v", fc)
			}
		}
	})
}
