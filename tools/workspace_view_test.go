package tools_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/applypatch"
	"github.com/troupe-ai/troupe/tools/toolstest"
)

// viewTree is a workspace opened as a view root through /proc/self/root,
// the form of an overlay worktree's merged view (/proc/<holder>/root/P):
// resolving it would give another path, so every result below must keep
// the root as given. Its commands would see it at inside.
type viewTree struct {
	real, root, inside, outside string
	ws                          *tools.Workspace
}

func newViewTree(t *testing.T) viewTree {
	t.Helper()
	v := viewTree{real: t.TempDir(), outside: t.TempDir(), inside: "/inside/ws"}
	v.root = "/proc/self/root" + v.real
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(v.real, "src", "inner"), 0o755))
	must(os.WriteFile(filepath.Join(v.real, "src", "a.go"), []byte("package a\n\nfunc A() {}\n"), 0o644))
	must(os.WriteFile(filepath.Join(v.outside, "secret"), []byte("s3cret\n"), 0o644))
	for link, target := range map[string]string{
		"abs-out":          filepath.Join(v.outside, "secret"), // an absolute link out
		"dir-out":          v.outside,
		"rel-out":          "../../../../../../../../.." + v.outside,
		"inside-up":        "/inside/ws/../elsewhere", // the commands' path, leaving the tree
		"inside-in":        "/inside/ws/src/a.go",     // the commands' path to a file in the tree
		"view-in":          v.root + "/src",           // the view's own path
		"src/inner/up":     "../..",
		"src/esc":          "../../x", // relative, one level above the root
		"src/inner/dangle": filepath.Join(v.outside, "not-yet"),
	} {
		must(os.Symlink(target, filepath.Join(v.real, link)))
	}
	ws, err := tools.NewWorkspaceView(v.root, tools.View{Inside: v.inside, Enter: func(string) []string { return []string{"/bin/false"} }})
	must(err)
	t.Cleanup(func() { _ = ws.Close() })
	v.ws = ws
	return v
}

// A view root is resolved beneath itself: its path is kept as given, the
// links in it are followed while they stay in the tree (named by either
// of its paths), and every way out is refused.
func TestWorkspaceViewResolve(t *testing.T) {
	v := newViewTree(t)
	a := filepath.Join(v.root, "src", "a.go")
	for in, want := range map[string]string{
		"src/a.go":            a,
		"":                    v.root,
		"inside-in":           a,
		"view-in/a.go":        a,
		"src/inner/up/src":    filepath.Join(v.root, "src"),
		"/inside/ws/src/a.go": a,
		"/inside/ws":          v.root,
		v.root + "/src/a.go":  a,
		"new/dir/f.txt":       filepath.Join(v.root, "new", "dir", "f.txt"),
	} {
		if got, err := v.ws.Resolve(in); err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"..", "../x", "/etc/passwd", v.real + "/src/a.go", "/inside/ws/../x", "/inside/wsx",
		"abs-out", "dir-out/secret", "rel-out", "inside-up", "src/inner/dangle", "src/esc", "src/esc/y"} {
		if got, err := v.ws.Resolve(in); !errors.Is(err, tools.ErrOutsideWorkspace) {
			t.Errorf("Resolve(%q) = %q, %v; want a refusal", in, got, err)
		}
	}
	if got := v.ws.CommandPath(a); got != "/inside/ws/src/a.go" {
		t.Errorf("CommandPath = %q", got)
	}
	if v.ws.Enter(a) == nil || v.ws.CommandRoot() != v.inside || v.ws.Root() != v.root {
		t.Errorf("Enter %v, CommandRoot %q, Root %q", v.ws.Enter(a), v.ws.CommandRoot(), v.ws.Root())
	}
}

// A component swapped for a link out of the tree after Resolve looked:
// the access through the root held open refuses it.
func TestWorkspaceViewSwappedComponent(t *testing.T) {
	v := newViewTree(t)
	if err := os.MkdirAll(filepath.Join(v.real, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	abs, err := v.ws.Resolve("sub/secret")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(v.real, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(v.outside, filepath.Join(v.real, "sub")); err != nil {
		t.Fatal(err)
	}
	if b, err := v.ws.ReadFile(abs); !errors.Is(err, tools.ErrOutsideWorkspace) {
		t.Errorf("read through the swapped component: %q, %v", b, err)
	}
	if err := v.ws.WriteAtomic(abs, []byte("x"), 0o644); !errors.Is(err, tools.ErrOutsideWorkspace) {
		t.Errorf("write through the swapped component: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(v.outside, "secret")); string(b) != "s3cret\n" {
		t.Errorf("the file outside was changed: %q", b)
	}
}

// Every file tool works in a view root, and what it shows is relative to
// the root: read, write, edit, apply_patch, grep, find_files, list_dir.
func TestWorkspaceViewTools(t *testing.T) {
	v := newViewTree(t)
	s := tools.NewSession("view", v.ws, tools.Config{DataDir: t.TempDir(), StateDir: t.TempDir()})
	t.Cleanup(func() { _ = s.Close() })
	run := func(tool tools.Tool, args string, want ...string) string {
		t.Helper()
		r := toolstest.RunTool(t, tool, s, args)
		for _, w := range want {
			if !strings.Contains(r.Text, w) {
				t.Errorf("%s %s: %q lacks %q", tool.Spec().Name, args, r.Text, w)
			}
		}
		if r.IsError || strings.Contains(r.Text, "/proc/") || strings.Contains(r.Text, v.real) {
			t.Errorf("%s %s: %q", tool.Spec().Name, args, r.Text)
		}
		return r.Text
	}
	run(tools.ReadFile(), `{"path":"src/a.go"}`, "func A() {}")
	run(tools.WriteFile(), `{"path":"src/b.go","content":"package a\n\nfunc B() {}\n"}`)
	run(tools.EditFile(), `{"path":"src/b.go","old_string":"func B() {}","new_string":"func B() { A() }"}`)
	run(applypatch.ApplyPatch(), `{"patch":"*** Begin Patch\n*** Add File: docs/c.md\n+calls B\n*** End Patch\n"}`)
	run(tools.Grep(), `{"pattern":"B\\(","mode":"content"}`, "src/b.go")
	run(tools.Grep(), `{"pattern":"func","path":"/inside/ws/src"}`, "src/a.go", "src/b.go")
	run(tools.FindFiles(), `{"pattern":"*.md"}`, "docs/c.md")
	run(tools.ListDir(), `{"path":"src"}`, "a.go", "b.go")
	if b, err := os.ReadFile(filepath.Join(v.real, "src", "b.go")); err != nil || string(b) != "package a\n\nfunc B() { A() }\n" {
		t.Errorf("src/b.go on disk: %q, %v", b, err)
	}
	if r := toolstest.RunTool(t, tools.ReadFile(), s, `{"path":"abs-out"}`); !r.IsError || strings.Contains(r.Text, "s3cret") {
		t.Errorf("read_file through a link out: %q", r.Text)
	}
	if r := toolstest.RunTool(t, tools.WriteFile(), s, `{"path":"dir-out/planted","content":"x"}`); !r.IsError {
		t.Errorf("write_file through a link out: %q", r.Text)
	}
	if _, err := os.Stat(filepath.Join(v.outside, "planted")); err == nil {
		t.Error("write_file wrote outside the tree")
	}
}
