package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Symlinks inside the workspace that point inside it work for every file
// tool, whether their target is relative or absolute (os.Root refuses
// absolute links; Resolve turns the path into one without links first),
// while one pointing outside is refused with the usual error.
func TestFileToolsThroughInsideSymlinks(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	root := s.Workspace.Root()
	writeFile(t, s, "real/f.txt", "needle one\n")
	outside := t.TempDir()
	for link, target := range map[string]string{
		"rel": "real", "abs": filepath.Join(root, "real"), "out": outside,
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	call := func(tool Tool, args map[string]any) Result {
		t.Helper()
		raw, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		return runTool(t, tool, s, string(raw))
	}
	for _, link := range []string{"rel", "abs"} {
		steps := []struct {
			tool Tool
			args map[string]any
			want string
		}{
			{ReadFile(), map[string]any{"path": link + "/f.txt"}, "L1: needle one"},
			{Grep(), map[string]any{"pattern": "needle", "path": link, "mode": "content"}, "real/f.txt:1: needle one"},
			{Grep(), map[string]any{"pattern": "needle", "path": link + "/f.txt"}, "real/f.txt"},
			{FindFiles(), map[string]any{"pattern": "*.txt", "path": link}, "real/f.txt"},
			{ListDir(), map[string]any{"path": link}, "f.txt"},
			{EditFile(), map[string]any{"path": link + "/f.txt", "old_string": "one", "new_string": "two"}, "Edited real/f.txt"},
			{WriteFile(), map[string]any{"path": link + "/f.txt", "content": "needle one\n"}, "real/f.txt"},
			{WriteFile(), map[string]any{"path": link + "/new-" + link + ".txt", "content": "x\n"}, "real/new-" + link + ".txt"},
		}
		for _, st := range steps {
			r := call(st.tool, st.args)
			if r.IsError || !strings.Contains(r.Text, st.want) {
				t.Errorf("%s %v: %q, want %q", st.tool.Spec().Name, st.args, r.Text, st.want)
			}
		}
	}
	for _, c := range []struct {
		tool Tool
		args map[string]any
	}{
		{ReadFile(), map[string]any{"path": "out/f.txt"}},
		{ListDir(), map[string]any{"path": "out"}},
		{Grep(), map[string]any{"path": "out", "pattern": "x"}},
		{FindFiles(), map[string]any{"path": "out", "pattern": "*"}},
		{WriteFile(), map[string]any{"path": "out/new.txt", "content": "x"}},
		{EditFile(), map[string]any{"path": "out/new.txt", "old_string": "", "new_string": "x"}},
	} {
		if r := call(c.tool, c.args); !r.IsError || !strings.Contains(r.Text, "path is outside the workspace") {
			t.Errorf("%s through a link out: %q, want the outside-the-workspace error", c.tool.Spec().Name, r.Text)
		}
	}
	entries, err := os.ReadDir(outside)
	if err != nil || len(entries) != 0 {
		t.Errorf("outside folder holds %v, %v", entries, err)
	}
}
