package tools

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fixtureBase is the modification time of the oldest fixture file.
var fixtureBase = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// fixtureFile is one file of testdata/searchtree/tree.txtar.
type fixtureFile struct {
	path    string
	content string
	crlf    bool
}

// parseFixture reads the txtar-style description: a comment, then
// "-- path [flags] --" headers each followed by the file's lines.
func parseFixture(t *testing.T, text string) []fixtureFile {
	t.Helper()
	var files []fixtureFile
	var cur *fixtureFile
	for _, line := range strings.SplitAfter(text, "\n") {
		trimmed := strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") {
			fields := strings.Fields(trimmed[3 : len(trimmed)-3])
			if len(fields) == 0 {
				t.Fatalf("fixture: empty header %q", trimmed)
			}
			files = append(files, fixtureFile{path: fields[0], crlf: slices.Contains(fields[1:], "crlf")})
			cur = &files[len(files)-1]
			continue
		}
		if cur != nil {
			cur.content += line
		}
	}
	return files
}

// buildSearchTree builds the fixture tree in dir with deterministic
// modification times: files one minute apart in the order created, every
// directory older than every file.
func buildSearchTree(t *testing.T, dir string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "searchtree", "tree.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	files := parseFixture(t, string(raw))
	late := "TODO before the binary part\n" + strings.Repeat("filler line\n", 70<<10/12) + "\x00 TODO after\n"
	long := strings.Repeat("var a=1;", 250) + "/* TODO: unminify */" + strings.Repeat("b", 1000) + "\n"
	files = append(files,
		fixtureFile{path: "bin/blob.dat", content: "TODO\x00\x01\x02 binary\n"},
		fixtureFile{path: "bin/late.dat", content: late},
		fixtureFile{path: "long/min.js", content: long},
		fixtureFile{path: ".git/HEAD", content: "ref: refs/heads/main\n"},
	)
	var made []string
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		content := f.content
		if f.crlf {
			content = strings.ReplaceAll(content, "\n", "\r\n")
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		made = append(made, p)
	}
	for _, l := range []struct{ link, target string }{
		{"links/main.go", "../main.go"}, {"links/pkg", "../pkg"},
	} {
		p := filepath.Join(dir, filepath.FromSlash(l.link))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(l.target, p); err != nil {
			t.Skipf("cannot make symbolic links here: %v", err)
		}
		made = append(made, p)
	}
	for i, p := range made {
		setMtime(t, p, fixtureBase.Add(time.Duration(i)*time.Minute))
	}
	var dirs []string
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != dir {
			dirs = append(dirs, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range dirs { // lexical order: a directory is older than those after it
		setMtime(t, d, fixtureBase.Add(-time.Hour+time.Duration(i)*time.Second))
	}
}

// setMtime sets the modification time of p itself (not of a link's target).
func setMtime(t *testing.T, p string, mt time.Time) {
	t.Helper()
	if err := lchtimes(p, mt); err != nil {
		t.Fatal(err)
	}
}

// fixtureSession is a session whose workspace holds the fixture tree.
func fixtureSession(t *testing.T) *Session {
	t.Helper()
	s := newTestSession(t)
	buildSearchTree(t, s.Workspace.Root())
	return s
}
