package tools

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWorkspaceConfinement(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "src", "inner"), 0o755))
	must(os.WriteFile(filepath.Join(root, "src", "a.go"), []byte("a"), 0o644))
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link-out")))
	must(os.Symlink(outside, filepath.Join(root, "dir-out")))
	must(os.Symlink(filepath.Join(root, "src"), filepath.Join(root, "dir-in")))
	must(os.Symlink(filepath.Join(outside, "not-yet"), filepath.Join(root, "dangling-out")))
	must(os.Symlink("../..", filepath.Join(root, "src", "inner", "up")))
	ws, err := NewWorkspace(root)
	must(err)
	real, _ := filepath.EvalSymlinks(root)

	ok := map[string]string{
		"src/a.go":              filepath.Join(real, "src", "a.go"),
		".":                     real,
		"":                      real,
		"src/../src/a.go":       filepath.Join(real, "src", "a.go"),
		"dir-in/a.go":           filepath.Join(real, "src", "a.go"),
		"new/dir/file.txt":      filepath.Join(real, "new", "dir", "file.txt"),
		real + "/src/a.go":      filepath.Join(real, "src", "a.go"),
		"src/inner/up/src":      filepath.Join(real, "src"),
		"src/inner/up/..":       filepath.Join(real, "src", "inner"), // ".." is lexical, as every tool opens the resolved path
		"dir-in/../src/a.go":    filepath.Join(real, "src", "a.go"),
		"./src/./inner/../a.go": filepath.Join(real, "src", "a.go"),
	}
	for in, want := range ok {
		got, err := ws.Resolve(in)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := []string{"..", "../x", "src/../../x", "/etc/passwd", outside, "link-out", "dir-out/secret",
		"dir-out", "dangling-out", "dangling-out/deeper", "src/inner/up/../../../..", "a\x00b"}
	for _, in := range bad {
		got, err := ws.Resolve(in)
		if err == nil {
			t.Errorf("Resolve(%q) = %q, want an error", in, got)
		} else if in != "a\x00b" && !errors.Is(err, ErrOutsideWorkspace) {
			t.Errorf("Resolve(%q) error %v does not wrap ErrOutsideWorkspace", in, err)
		}
	}
	if got := ws.Rel(filepath.Join(real, "src", "a.go")); got != "src/a.go" {
		t.Errorf("Rel = %q", got)
	}
	if got := ws.Display("/etc/hosts"); got != "/etc/hosts" {
		t.Errorf("Display outside = %q", got)
	}
}

func TestWorkspaceMustBeDir(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewWorkspace(f); err == nil {
		t.Error("a file accepted as workspace")
	}
	if _, err := NewWorkspace(filepath.Join(f, "missing")); err == nil {
		t.Error("a missing dir accepted as workspace")
	}
}

func TestReadTracker(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	p := writeFile(t, s, "f.txt", "one\n")
	tr := s.Reads
	if _, err := tr.Check(s.Workspace, p, "f.txt"); err == nil || !contains(err.Error(), "has not been read") {
		t.Fatalf("unread: %v", err)
	}
	tr.Record(p, []byte("one\n"))
	if _, err := tr.Check(s.Workspace, p, "f.txt"); err != nil {
		t.Fatalf("fresh read refused: %v", err)
	}
	if err := os.WriteFile(p, []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Check(s.Workspace, p, "f.txt"); err == nil || !contains(err.Error(), "changed on disk since you last read it") {
		t.Fatalf("changed file: %v", err)
	}
	tr.Forget(p)
	if tr.WasRead(p) {
		t.Fatal("Forget kept the read")
	}
}
