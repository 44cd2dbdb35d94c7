package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
)

// fuzzCanary marks every name and line outside the fuzzed workspace.
const fuzzCanary = "OUTSIDECANARY"

// fuzzWorkspace builds a workspace full of symbolic links (inside and
// outside, relative and absolute, dangling, looping) next to an outside
// folder whose names and content carry the canary.
func fuzzWorkspace(t *testing.T) (s *Session, outside string) {
	t.Helper()
	s = newTestSession(t)
	root := s.Workspace.Root()
	outside = t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "src", "inner"), 0o755))
	must(os.WriteFile(filepath.Join(root, "src", "a.txt"), []byte("inside a\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "src", "inner", "b.txt"), []byte("inside b\n"), 0o644))
	must(os.MkdirAll(filepath.Join(outside, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(outside, fuzzCanary+".txt"), []byte(fuzzCanary+"\n"), 0o644))
	must(os.WriteFile(filepath.Join(outside, "a.txt"), []byte(fuzzCanary+" a\n"), 0o644))
	must(os.WriteFile(filepath.Join(outside, "sub", "b.txt"), []byte(fuzzCanary+" b\n"), 0o644))
	for link, target := range map[string]string{
		"in-rel":        "src",
		"in-abs":        filepath.Join(root, "src"),
		"in-file":       "src/a.txt",
		"src/inner/up":  "../..",
		"src/up2":       "../src/inner",
		"out-abs":       outside,
		"out-rel":       mustRel(t, root, outside),
		"out-file":      filepath.Join(outside, "a.txt"),
		"src/out-up":    "../../" + filepath.Base(outside),
		"dangling-out":  filepath.Join(outside, "not-yet"),
		"dangling-in":   "src/not-yet",
		"loop":          "loop",
		"src/inner/abs": "/",
	} {
		must(os.Symlink(target, filepath.Join(root, link)))
	}
	return s, outside
}

func mustRel(t *testing.T, base, p string) string {
	t.Helper()
	r, err := filepath.Rel(base, p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// FuzzWorkspacePath gives arbitrary path arguments to the path resolver
// and to every file tool over a workspace full of symbolic links: nothing
// resolves outside, no result shows an outside name or line, and nothing
// outside is created or changed. In the path, ROOT and OUT stand for the
// workspace's and the outside folder's absolute paths.
func FuzzWorkspacePath(f *testing.F) {
	for _, seed := range []string{
		"", ".", "src/a.txt", "in-rel/a.txt", "in-abs/a.txt", "in-file", "src/inner/up/src/a.txt",
		"src/up2/b.txt", "out-abs", "out-abs/a.txt", "out-rel/sub/b.txt", "out-file", "src/out-up/a.txt",
		"dangling-out", "dangling-out/x", "dangling-in", "loop", "loop/x", "src/inner/abs/etc/passwd",
		"..", "../x", "src/../../x", "/etc/passwd", "OUT", "OUT/a.txt", "ROOT/src/a.txt", "ROOT/../x",
		"ROOT/out-abs/a.txt", "new/dir/file.txt", "in-rel/new.txt", "out-abs/new.txt", "src//a.txt",
		"./src/./inner/../a.txt", "src/a.txt/", "a\x00b", "\"src/a.txt\"", "src/inner/up/out-abs/sub",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, p string) {
		s, outside := fuzzWorkspace(t)
		root := s.Workspace.Root()
		p = strings.ReplaceAll(strings.ReplaceAll(p, "ROOT", root), "OUT", outside)
		before := testfiles.Snapshot(t, outside)

		if abs, err := s.Workspace.Resolve(p); err == nil {
			if !s.Workspace.contains(abs) {
				t.Fatalf("Resolve(%q) = %q, outside the root %s", p, abs, root)
			}
			if real, err := resolveExisting(abs); err == nil && !s.Workspace.contains(real) {
				t.Fatalf("Resolve(%q) = %q, which leads to %q", p, abs, real)
			}
		}
		call := func(tool Tool, args map[string]any) {
			raw, err := json.Marshal(args)
			if err != nil {
				t.Fatal(err)
			}
			res, err := tool.Run(t.Context(), s, raw)
			if err != nil {
				t.Fatalf("%s %s: Go error %v", tool.Spec().Name, raw, err)
			}
			if strings.Contains(res.Text, fuzzCanary) {
				t.Fatalf("%s %s showed something outside: %s", tool.Spec().Name, raw, res.Text)
			}
		}
		call(ReadFile(), map[string]any{"path": p})
		call(ListDir(), map[string]any{"path": p, "depth": 3})
		call(Grep(), map[string]any{"pattern": "a", "path": p, "mode": "content"})
		call(FindFiles(), map[string]any{"pattern": "*", "path": p})
		call(WriteFile(), map[string]any{"path": p, "content": "fuzz\n"})
		call(EditFile(), map[string]any{"path": p + ".e", "old_string": "", "new_string": "fuzz\n"})
		after := testfiles.Snapshot(t, outside)
		for q, c := range after {
			if was, ok := before[q]; !ok || was != c {
				t.Fatalf("path %q: %s created or changed outside the workspace", p, q)
			}
		}
		if len(after) != len(before) {
			t.Fatalf("path %q: something outside the workspace was removed", p)
		}
	})
}
