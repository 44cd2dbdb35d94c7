package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Files whose names take 233 to 255 bytes (255 is the limit of most file
// systems) can be created and rewritten by every writing tool: the
// temporary file beside them has a short name of its own, not one derived
// from theirs. Nothing temporary is left behind.
func TestWriteLongFileNames(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	root := s.Workspace.Root()
	name := func(tool string, n int) string {
		prefix := fmt.Sprintf("%s-%d-", tool, n)
		return prefix + strings.Repeat("n", n-len(prefix)-len(".txt")) + ".txt"
	}
	for n := 233; n <= 255; n++ {
		w, e := name("w", n), name("e", n)
		if len(w) != n || len(e) != n {
			t.Fatalf("name lengths %d %d, want %d", len(w), len(e), n)
		}
		steps := []struct {
			tool Tool
			args map[string]any
		}{
			{WriteFile(), map[string]any{"path": "long/" + w, "content": "one\n"}},
			{WriteFile(), map[string]any{"path": "long/" + w, "content": "two\n"}},
			{EditFile(), map[string]any{"path": "long/" + e, "old_string": "", "new_string": "one\n"}},
			{EditFile(), map[string]any{"path": "long/" + e, "old_string": "one", "new_string": "two"}},
		}
		for _, st := range steps {
			args, err := json.Marshal(st.args)
			if err != nil {
				t.Fatal(err)
			}
			if r := runTool(t, st.tool, s, string(args)); r.IsError {
				t.Fatalf("%d bytes: %s %v: %s", n, st.tool.Spec().Name, st.args, r.Text)
			}
		}
		for _, f := range []string{w, e} {
			b, err := os.ReadFile(filepath.Join(root, "long", f))
			if err != nil || string(b) != "two\n" {
				t.Errorf("%d bytes: %s holds %q, %v; want \"two\\n\"", n, f[:10], b, err)
			}
		}
	}
	entries, err := os.ReadDir(filepath.Join(root, "long"))
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * (255 - 233 + 1); len(entries) != want {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				t.Errorf("left behind: %s", e.Name())
			}
		}
		t.Errorf("%d entries in long/, want %d", len(entries), want)
	}
}
