package search

import (
	"strings"
	"testing"
	"time"
)

func fixedTime() time.Time        { return time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC) }
func minutes(n int) time.Duration { return time.Duration(n) * time.Minute }

func TestGlob(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pattern         string
		smart           bool
		name, rel, relS string
		want            bool
	}{
		{"*.go", false, "a.go", "x/a.go", "x/a.go", true},
		{"*.go", false, "a.GO", "a.GO", "a.GO", false},
		{"*.go", true, "a.GO", "a.GO", "a.GO", true}, // smart case: lower-case pattern
		{"*.GO", true, "a.go", "a.go", "a.go", false},
		{"*.{ts,tsx}", false, "v.tsx", "w/v.tsx", "w/v.tsx", true},
		{"file[0-9].txt", false, "file7.txt", "file7.txt", "file7.txt", true},
		{"Makefile", false, "Makefile", "a/Makefile", "a/Makefile", true},
		{"src/*.go", false, "a.go", "src/a.go", "a.go", true},
		{"src/*.go", false, "a.go", "x/src/a.go", "src/a.go", true}, // relative to the searched dir
		{"src/*.go", false, "a.go", "src/sub/a.go", "src/sub/a.go", false},
		{"**/testdata/*.json", false, "a.json", "p/q/testdata/a.json", "p/q/testdata/a.json", true},
		{"./cmd/**", false, "main.go", "cmd/x/main.go", "cmd/x/main.go", true},
		{"*.txt/", false, "a.txt", "a.txt", "a.txt", true},
	}
	for _, c := range cases {
		g, err := CompileGlob(c.pattern, c.smart)
		if err != nil {
			t.Fatalf("%q: %v", c.pattern, err)
		}
		if got := g.Match(c.name, c.rel, c.relS); got != c.want {
			t.Errorf("%q (smart %v) on %s: %v, want %v", c.pattern, c.smart, c.rel, got, c.want)
		}
	}
	for _, bad := range []string{"", "  ", "[abc", "*.{go", "/"} {
		if _, err := CompileGlob(bad, false); err == nil {
			t.Errorf("CompileGlob(%q) accepted a bad glob", bad)
		}
	}
}

func TestFileFilter(t *testing.T) {
	t.Parallel()
	allow := func(include, typ, name string) bool {
		f, err := NewFileFilter(include, typ)
		if err != nil {
			t.Fatalf("%q %q: %v", include, typ, err)
		}
		return f.Allow(name, name, name)
	}
	cases := []struct {
		include, typ, name string
		want               bool
	}{
		{"", "", "anything", true},
		{"", "go", "a.go", true},
		{"", "go", "a.go.txt", false},
		{"", "c", "x.h", true},
		{"", "c", "x.cc", false},
		{"", "cpp", "x.cc", true},
		{"", "cpp", "x.hpp", true},
		{"", "ts", "v.tsx", true},
		{"", "js", "v.tsx", false},
		{"", "sh", ".bashrc", true},
		{"", "toml", "Cargo.lock", true},
		{"", "json", "composer.lock", true},
		{"", "proto", "api.proto", true},
		{"", "PY", "x.py", true}, // type names ignore case
		{"", "golang", "x.go", false},
		{"*_test.go", "", "a_test.go", true},
		{"*_test.go", "", "a.go", false},
		{"!*_test.go", "", "a_test.go", false},
		{"!*_test.go", "", "a.go", true},
		{"*_test.go", "go", "a_test.go", true},
		{"*.md", "go", "a.md", false}, // both must agree
	}
	for _, c := range cases {
		if c.typ == "golang" {
			if _, err := NewFileFilter("", c.typ); err == nil || !strings.Contains(err.Error(), "known types: asm, c, cpp") {
				t.Errorf("unknown type %q: %v", c.typ, err)
			}
			continue
		}
		if got := allow(c.include, c.typ, c.name); got != c.want {
			t.Errorf("include %q type %q on %q: %v, want %v", c.include, c.typ, c.name, got, c.want)
		}
	}
	var nilFilter *FileFilter
	if !nilFilter.Allow("x", "x", "x") {
		t.Error("a nil filter refused a file")
	}
}

func TestTypeNamesCoverTheDocumentedOnes(t *testing.T) {
	t.Parallel()
	for _, n := range strings.Fields("go rust py js ts java c cpp cs rb php kotlin swift scala sh md json yaml toml html css sql proto") {
		if typeGlobs(n) == nil {
			t.Errorf("type %q is missing", n)
		}
	}
}
