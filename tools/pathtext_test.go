package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file name with a line end or another control character is shown
// quoted in every listing, so the listing stays one entry per line, and
// the quoted form reads the file back.
func TestControlCharactersInNamesAreEscaped(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	odd := "evil\nname\t.txt"
	if err := os.WriteFile(filepath.Join(s.Workspace.Root(), odd), []byte("needle\n"), 0o644); err != nil {
		t.Skipf("this file system refuses the name: %v", err)
	}
	writeFile(t, s, "plain.txt", "needle\n")
	quoted := `"evil\nname\t.txt"`
	for _, c := range []struct {
		tool Tool
		args string
	}{
		{ListDir(), `{}`},
		{FindFiles(), `{"pattern":"*.txt"}`},
		{Grep(), `{"pattern":"needle"}`},
		{Grep(), `{"pattern":"needle","mode":"content"}`},
	} {
		r := runTool(t, c.tool, s, c.args)
		if !strings.Contains(r.Text, quoted) || strings.Contains(r.Text, "evil\nname") {
			t.Errorf("%s: %q", c.tool.Spec().Name, r.Text)
		}
		if !strings.Contains(r.Text, "plain.txt") || strings.Contains(r.Text, `"plain.txt"`) {
			t.Errorf("%s: plain names must stay plain: %q", c.tool.Spec().Name, r.Text)
		}
	}
	r := runTool(t, ReadFile(), s, `{"path":"\"evil\\nname\\t.txt\""}`)
	if r.IsError || !strings.Contains(r.Text, "L1: needle") {
		t.Errorf("read_file of the quoted name: %q", r.Text)
	}
}
