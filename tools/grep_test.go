package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// runTool calls a tool with JSON arguments and fails on a harness error.
func runTool(t *testing.T, tool Tool, s *Session, args string) Result {
	t.Helper()
	res, err := tool.Run(t.Context(), s, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s %s: harness error %v", tool.Spec().Name, args, err)
	}
	return res
}

// shown is a result as a golden file holds it: the text, marked when it
// is an error result, with the temporary workspace root written <root>.
func shown(s *Session, res Result) string {
	text := strings.ReplaceAll(res.Text, s.Workspace.Root(), "<root>")
	if res.IsError {
		return "[error]\n" + text + "\n"
	}
	return text + "\n"
}

func TestGrepGolden(t *testing.T) {
	s := fixtureSession(t)
	cases := []struct{ name, args string }{
		{"files_default", `{"pattern": "TODO"}`},
		{"files_smart_case", `{"pattern": "todo"}`},
		{"files_forced_case", `{"pattern": "todo", "case_sensitive": true}`},
		{"files_forced_nocase", `{"pattern": "Todo", "case_sensitive": false}`},
		{"content", `{"pattern": "TODO", "mode": "content"}`},
		{"content_context", `{"pattern": "match", "path": "context", "mode": "content", "context_lines": 1}`},
		{"content_before_after", `{"pattern": "match", "path": "context/lines.txt", "mode": "content", "before": 2, "after": 0}`},
		{"content_after_overrides", `{"pattern": "match", "path": "context", "mode": "content", "context_lines": 3, "after": 1}`},
		{"count", `{"pattern": "todo", "mode": "count"}`},
		{"type_go", `{"pattern": "TODO", "type": "go"}`},
		{"type_ts", `{"pattern": "todo", "type": "ts"}`},
		{"type_sh", `{"pattern": "todo|run", "type": "sh"}`},
		{"include_braces", `{"pattern": "todo", "include": "*.{ts,tsx,css}"}`},
		{"include_exclude", `{"pattern": "todo", "include": "!*.go"}`},
		{"include_path", `{"pattern": "package", "include": "pkg/**/*.go"}`},
		{"literal", `{"pattern": "a.b", "literal": true, "mode": "content", "path": "regex"}`},
		{"regex_dot", `{"pattern": "a.b", "mode": "content", "path": "regex"}`},
		{"literal_metachars", `{"pattern": "$5 (approx)", "literal": true, "mode": "content"}`},
		{"literal_brackets", `{"pattern": "[x]", "literal": true, "mode": "content"}`},
		{"alternation", `{"pattern": "Handler|Leaf", "mode": "content"}`},
		{"class_quantifier", `{"pattern": "[A-Z][a-z]+\\(\\)", "mode": "content"}`},
		{"invert", `{"pattern": "TODO", "invert": true, "mode": "content", "path": "crlf"}`},
		{"invert_count", `{"pattern": "e", "invert": true, "mode": "count", "path": "context"}`},
		{"multiline", `{"pattern": "begin\\n\\s*middle\\n\\s*end", "multiline": true, "mode": "content"}`},
		{"multiline_count", `{"pattern": "begin\\s+\\w+", "multiline": true, "mode": "count", "path": "multi"}`},
		{"multiline_dotall", `{"pattern": "(?s)begin.*?end", "multiline": true, "mode": "content", "path": "multi"}`},
		{"crlf_dollar", `{"pattern": "todo$", "mode": "content", "path": "crlf"}`},
		{"unicode_fold", `{"pattern": "καλημέρα", "mode": "content"}`},
		{"unicode_fold_sigma", `{"pattern": "κόσμε", "mode": "content"}`},
		{"unicode_exact", `{"pattern": "café", "mode": "content"}`},
		{"long_line", `{"pattern": "TODO", "path": "long", "mode": "content"}`},
		{"binary_files", `{"pattern": "TODO", "path": "bin"}`},
		{"binary_count", `{"pattern": "TODO", "path": "bin", "mode": "count"}`},
		{"explicit_hidden_file", `{"pattern": "TODO", "path": ".hidden/config.go", "mode": "content"}`},
		{"explicit_hidden_dir", `{"pattern": "TODO", "path": ".hidden"}`},
		{"explicit_ignored_dir", `{"pattern": "TODO", "path": "build"}`},
		{"symlinks_not_followed", `{"pattern": "hello", "path": "links"}`},
		{"explicit_symlink", `{"pattern": "hello", "path": "links/main.go", "mode": "content"}`},
		{"empty_file", `{"pattern": "^", "path": "empty.txt", "mode": "count"}`},
		{"no_match", `{"pattern": "nothing matches this"}`},
		{"page_1", `{"pattern": "todo", "limit": 3}`},
		{"page_2", `{"pattern": "todo", "limit": 3, "offset": 3}`},
		{"content_page_1", `{"pattern": "match", "path": "context", "mode": "content", "limit": 2}`},
		{"content_page_2", `{"pattern": "match", "path": "context", "mode": "content", "limit": 2, "offset": 2}`},
		{"count_page", `{"pattern": "todo", "mode": "count", "limit": 2, "offset": 1}`},
		{"offset_past_end", `{"pattern": "todo", "offset": 500}`},
		{"error_bad_regex", `{"pattern": "func (foo"}`},
		{"error_bad_repeat", `{"pattern": "a**"}`},
		{"error_newline", `{"pattern": "begin\\nend"}`},
		{"error_unknown_type", `{"pattern": "x", "type": "golang"}`},
		{"error_bad_glob", `{"pattern": "x", "include": "*.{go"}`},
		{"error_outside", `{"pattern": "x", "path": "../elsewhere"}`},
		{"error_missing_path", `{"pattern": "x", "path": "no/such/dir"}`},
		{"error_empty_pattern", `{"pattern": ""}`},
		{"error_bad_mode", `{"pattern": "x", "mode": "lines"}`},
		{"error_missing_pattern", `{"path": "pkg"}`},
		{"error_negative_offset", `{"pattern": "x", "offset": -1}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			golden(t, "grep/"+c.name, shown(s, runTool(t, Grep(), s, c.args)))
		})
	}
}

// TestGrepSmartCase checks the rule itself, apart from the goldens: a
// pattern with an upper-case letter is case-sensitive, one without is not.
func TestGrepSmartCase(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "a.txt", "Hello\nhello\nHELLO\n")
	for _, c := range []struct {
		args string
		want string
	}{
		{`{"pattern": "hello", "mode": "count"}`, "a.txt: 3"},
		{`{"pattern": "Hello", "mode": "count"}`, "a.txt: 1"},
		{`{"pattern": "hello", "case_sensitive": true, "mode": "count"}`, "a.txt: 1"},
		{`{"pattern": "HELLO", "case_sensitive": false, "mode": "count"}`, "a.txt: 3"},
		{`{"pattern": "\\w+LO", "mode": "count"}`, "a.txt: 1"},          // an upper-case letter outside escapes
		{`{"pattern": "h\\S+o", "mode": "count"}`, "a.txt: 3"},          // \S is no upper-case letter
		{`{"pattern": "(?P<Word>hello)", "mode": "count"}`, "a.txt: 3"}, // nor is a group name
	} {
		if got := runTool(t, Grep(), s, c.args).Text; got != c.want {
			t.Errorf("%s = %q, want %q", c.args, got, c.want)
		}
	}
}

// TestGrepLimitCap checks that a limit above 2000 is cut to 2000 silently.
func TestGrepLimitCap(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "many.txt", strings.Repeat("hit\n", 2100))
	res := runTool(t, Grep(), s, `{"pattern": "hit", "mode": "content", "limit": 5000}`)
	if res.IsError {
		t.Fatalf("limit 5000 gave an error: %s", res.Text)
	}
	lines := strings.Split(res.Text, "\n")
	if len(lines) != 2001 || lines[1999] != "many.txt:2000: hit" || lines[2000] != "[more results: use offset=2000]" {
		t.Errorf("got %d lines ending %q", len(lines), lines[len(lines)-2:])
	}
	res = runTool(t, Grep(), s, `{"pattern": "hit", "mode": "content", "limit": 5000, "offset": 2000}`)
	lines = strings.Split(res.Text, "\n")
	if len(lines) != 100 || lines[0] != "many.txt:2001: hit" || lines[99] != "many.txt:2100: hit" {
		t.Errorf("second page: %d lines from %q to %q", len(lines), lines[0], lines[len(lines)-1])
	}
}

// TestGrepFilesLimitCap checks the cap in files mode, with more than 2000
// matching files.
func TestGrepFilesLimitCap(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	for i := range 2010 {
		writeFile(t, s, fmt.Sprintf("d%02d/f%04d.txt", i%20, i), "needle\n")
	}
	res := runTool(t, Grep(), s, `{"pattern": "needle", "limit": 2001}`)
	lines := strings.Split(res.Text, "\n")
	if len(lines) != 2001 || lines[2000] != "[more results: use offset=2000]" {
		t.Errorf("got %d lines, last %q", len(lines), lines[len(lines)-1])
	}
	if n := res.Metadata["files"]; n != 2010 {
		t.Errorf("metadata files = %v, want 2010", n)
	}
}

func TestGrepSpec(t *testing.T) {
	t.Parallel()
	spec := Grep().Spec()
	if !spec.ReadOnly || !spec.Cacheable || spec.Parallel != ParallelSafe || spec.Tier != TierAlways {
		t.Errorf("spec policies: %+v", spec)
	}
	if spec.Summary() == "" || !strings.Contains(spec.Description, "[more results: use offset=N]") {
		t.Errorf("description lacks its summary or output format")
	}
	tool := Grep()
	if got := tool.Paths(json.RawMessage(`{"pattern": "x"}`)); len(got) != 1 || got[0] != "." {
		t.Errorf("Paths without path = %q, want [.]", got)
	}
	if got := tool.Paths(json.RawMessage(`{"pattern": "x", "path": "pkg/deep"}`)); len(got) != 1 || got[0] != "pkg/deep" {
		t.Errorf("Paths = %q, want [pkg/deep]", got)
	}
}

// A pattern over 64 KiB is refused at once, with a clear error.
func TestGrepPatternTooLong(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "a.txt", "x\n")
	args, _ := json.Marshal(map[string]string{"pattern": strings.Repeat("a", 70<<10)})
	r := runTool(t, Grep(), s, string(args))
	if !r.IsError || !strings.Contains(r.Text, "over the limit of 65536") {
		t.Errorf("%+v", r)
	}
}
