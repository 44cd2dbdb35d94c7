package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestFindFilesGolden(t *testing.T) {
	s := fixtureSession(t)
	cases := []struct{ name, args string }{
		{"go_files", `{"pattern": "*.go"}`},
		{"test_files", `{"pattern": "*_test.go"}`},
		{"smart_case", `{"pattern": "readme.md"}`},
		{"case_sensitive", `{"pattern": "README*"}`},
		{"case_sensitive_miss", `{"pattern": "Readme.md"}`},
		{"braces", `{"pattern": "*.{ts,tsx}"}`},
		{"class", `{"pattern": "config.[jy]*"}`},
		{"question_mark", `{"pattern": "app.t?"}`},
		{"directory", `{"pattern": "nested"}`},
		{"doublestar_path", `{"pattern": "pkg/**/*.go"}`},
		{"slash_path", `{"pattern": "web/*"}`},
		{"under_path", `{"pattern": "*.go", "path": "pkg"}`},
		{"relative_to_path", `{"pattern": "deep/**/leaf*", "path": "pkg"}`},
		{"ignored_not_listed", `{"pattern": "*.txt"}`},
		{"hidden_not_listed", `{"pattern": "config.go"}`},
		{"explicit_hidden_dir", `{"pattern": "*.go", "path": ".hidden"}`},
		{"symlinks_listed", `{"pattern": "*", "path": "links"}`},
		{"page_1", `{"pattern": "*.go", "limit": 2}`},
		{"page_2", `{"pattern": "*.go", "limit": 2, "offset": 2}`},
		{"offset_past_end", `{"pattern": "*.go", "offset": 100}`},
		{"no_match", `{"pattern": "*.rs"}`},
		{"error_bad_glob", `{"pattern": "[abc"}`},
		{"error_empty", `{"pattern": " "}`},
		{"error_outside", `{"pattern": "*", "path": "/etc"}`},
		{"error_missing_path", `{"pattern": "*", "path": "nowhere"}`},
		{"error_missing_pattern", `{}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			golden(t, "find_files/"+c.name, shown(s, runTool(t, FindFiles(), s, c.args)))
		})
	}
}

// TestFindFilesLimitCap checks that a limit above 1000 is cut to 1000
// silently, with a pointer to the next page.
func TestFindFilesLimitCap(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	for i := range 1005 {
		writeFile(t, s, fmt.Sprintf("d%d/f%04d.txt", i%10, i), "")
	}
	res := runTool(t, FindFiles(), s, `{"pattern": "*.txt", "limit": 5000}`)
	if res.IsError {
		t.Fatalf("limit 5000 gave an error: %s", res.Text)
	}
	lines := strings.Split(res.Text, "\n")
	if len(lines) != 1001 || lines[1000] != "[more results: use offset=1000]" {
		t.Errorf("got %d lines, last %q", len(lines), lines[len(lines)-1])
	}
	res = runTool(t, FindFiles(), s, `{"pattern": "*.txt", "offset": 1000}`)
	if n := strings.Count(res.Text, "\n") + 1; n != 5 || strings.Contains(res.Text, "more results") {
		t.Errorf("last page: %d lines:\n%s", n, res.Text)
	}
}

func TestFindFilesSpec(t *testing.T) {
	t.Parallel()
	tool := FindFiles()
	spec := tool.Spec()
	if !spec.ReadOnly || !spec.Cacheable || spec.Parallel != ParallelSafe || spec.Tier != TierAlways {
		t.Errorf("spec policies: %+v", spec)
	}
	if got := tool.Paths(json.RawMessage(`{"pattern": "*.go"}`)); len(got) != 1 || got[0] != "." {
		t.Errorf("Paths without path = %q, want [.]", got)
	}
	if got := tool.Paths(json.RawMessage(`{"pattern": "*.go", "path": "web"}`)); len(got) != 1 || got[0] != "web" {
		t.Errorf("Paths = %q, want [web]", got)
	}
}
