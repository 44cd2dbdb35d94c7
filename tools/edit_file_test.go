package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// editOutcome renders a result and the file it acted on for a golden file,
// with carriage returns made visible.
func editOutcome(t *testing.T, s *Session, rel string, r Result) string {
	t.Helper()
	out := "--- result ---\n" + resultForGolden(r) + "--- " + rel + " ---\n"
	b, err := os.ReadFile(filepath.Join(s.Workspace.Root(), rel))
	if err != nil {
		return out + "(absent)\n"
	}
	return out + strings.ReplaceAll(string(b), "\r", `\r`) + "\n--- end ---\n"
}

// readWithTool registers rel as read through the real read_file tool.
func readWithTool(t *testing.T, s *Session, rel string) {
	t.Helper()
	res := callFileTool(t, s, ReadFile(), fmt.Sprintf(`{"path":%q}`, rel))
	if res.IsError {
		t.Fatalf("read_file %s: %s", rel, res.Text)
	}
}

func TestEditFileGolden(t *testing.T) {
	t.Parallel()
	goSrc := "package main\n\nfunc main() {\n\tif ok {\n\t\tfmt.Println(\"hi\")\n\t}\n}\n"
	cases := []struct {
		name    string
		file    string // initial content of f.txt; "-" for no file
		read    bool   // read f.txt with read_file first
		changed string // rewrite f.txt with this after reading
		args    string
	}{
		{name: "unique", file: "alpha\nbeta\ngamma\n", read: true,
			args: `{"path":"f.txt","old_string":"beta","new_string":"BETA\nBETA2"}`},
		{name: "several_without_replace_all", file: "x = 1\ny\nx = 1\nz\nz\nx = 1\n", read: true,
			args: `{"path":"f.txt","old_string":"x = 1","new_string":"x = 2"}`},
		{name: "replace_all", file: "x = 1\ny\nx = 1\nz\nz\nx = 1\n", read: true,
			args: `{"path":"f.txt","old_string":"x = 1","new_string":"x = 2\n// two","replace_all":true}`},
		{name: "not_found_similar", file: goSrc, read: true,
			args: `{"path":"f.txt","old_string":"fmt.Printn(\"hi\")","new_string":"x"}`},
		{name: "not_found", file: goSrc, read: true,
			args: `{"path":"f.txt","old_string":"completely different","new_string":"x"}`},
		{name: "identical", file: goSrc, read: true,
			args: `{"path":"f.txt","old_string":"main","new_string":"main"}`},
		{name: "unread", file: goSrc,
			args: `{"path":"f.txt","old_string":"main","new_string":"Main"}`},
		{name: "changed_since_read", file: goSrc, read: true, changed: goSrc + "// more\n",
			args: `{"path":"f.txt","old_string":"main","new_string":"Main"}`},
		{name: "crlf_kept", file: "one\r\ntwo\r\nthree\r\n", read: true,
			args: `{"path":"f.txt","old_string":"one\ntwo\n","new_string":"1\n2\n2.5\n"}`},
		{name: "lf_file_crlf_args", file: "one\ntwo\nthree\n", read: true,
			args: `{"path":"f.txt","old_string":"one\r\ntwo","new_string":"1\r\n2"}`},
		{name: "spaces_for_tabs", file: goSrc, read: true,
			args: `{"path":"f.txt","old_string":"    if ok {\n        fmt.Println(\"hi\")\n    }","new_string":"    if ok {\n        fmt.Println(\"hi\")\n        if more {\n            fmt.Println(\"more\")\n        }\n    }"}`},
		{name: "lost_base_indent", file: "def f():\n    if x:\n        return 1\n    return 2\n", read: true,
			args: `{"path":"f.txt","old_string":"if x:\n    return 1\n","new_string":"if x:\n    log(x)\n    return 1\n"}`},
		{name: "two_space_model_four_space_file", file: "class A:\n    def f(self):\n        pass\n", read: true,
			args: `{"path":"f.txt","old_string":"  def f(self):\n    pass","new_string":"  def f(self):\n    if self:\n      return 1\n    pass"}`},
		{name: "trailing_spaces_ignored", file: "a = 1   \nb = 2\n", read: true,
			args: `{"path":"f.txt","old_string":"a = 1\nb = 2","new_string":"a = 3\nb = 4"}`},
		{name: "loose_several", file: "\tx()\n\tw()\ny\n    x()\n    w()\n", read: true,
			args: `{"path":"f.txt","old_string":"  x()\n  w()","new_string":"  z()"}`},
		{name: "loose_replace_all", file: "\tx()\n\tw()\ny\n    x()\n    w()\n", read: true,
			args: `{"path":"f.txt","old_string":"  x()\n  w()","new_string":"  z()\n    zz()","replace_all":true}`},
		{name: "delete", file: "keep\ndrop me\nkeep too\n", read: true,
			args: `{"path":"f.txt","old_string":"drop me\n","new_string":""}`},
		{name: "end_without_newline", file: "first\nlast", read: true,
			args: `{"path":"f.txt","old_string":"last","new_string":"last\nreally last"}`},
		{name: "create_missing", file: "-",
			args: `{"path":"f.txt","old_string":"","new_string":"new file\nline two\n"}`},
		{name: "missing_with_old", file: "-",
			args: `{"path":"f.txt","old_string":"x","new_string":"y"}`},
		{name: "empty_old_existing", file: "content\n", read: true,
			args: `{"path":"f.txt","old_string":"","new_string":"y"}`},
		{name: "empty_old_empty_file", file: "", read: true,
			args: `{"path":"f.txt","old_string":"","new_string":"filled\n"}`},
		{name: "missing_new_string", file: "a\n", read: true,
			args: `{"path":"f.txt","old_string":"a"}`},
		{name: "replace_all_shifting_lines", file: "a\nb\na\nb\na\n", read: true,
			args: `{"path":"f.txt","old_string":"a\n","new_string":"a1\na2\na3\n","replace_all":true}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newTestSession(t)
			if c.file != "-" {
				abs := writeFile(t, s, "f.txt", c.file)
				if c.read {
					readWithTool(t, s, "f.txt")
				}
				if c.changed != "" {
					if err := os.WriteFile(abs, []byte(c.changed), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			res := callFileTool(t, s, EditFile(), c.args)
			golden(t, "edit_file/"+c.name, editOutcome(t, s, "f.txt", res))
		})
	}
}

func TestEditFileDirectory(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "d/x.txt", "x")
	res := callFileTool(t, s, EditFile(), `{"path":"d","old_string":"a","new_string":"b"}`)
	golden(t, "edit_file/directory", resultForGolden(res))
}

func TestEditFileCreatesInNewFolder(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	res := callFileTool(t, s, EditFile(), `{"path":"a/b/c.txt","old_string":"","new_string":"hi\n"}`)
	if res.IsError || res.Text != "Created a/b/c.txt (1 lines)" {
		t.Fatalf("got %+v", res)
	}
	got, err := os.ReadFile(filepath.Join(s.Workspace.Root(), "a/b/c.txt"))
	if err != nil || string(got) != "hi\n" {
		t.Fatalf("file holds %q, %v", got, err)
	}
	// The new file counts as read: editing it again needs no read_file.
	res = callFileTool(t, s, EditFile(), `{"path":"a/b/c.txt","old_string":"hi","new_string":"ho"}`)
	if res.IsError {
		t.Fatalf("second edit refused: %s", res.Text)
	}
}

func TestEditFileSuccessiveEditsNeedNoReread(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "f.txt", "one\ntwo\nthree\n")
	readWithTool(t, s, "f.txt")
	for _, args := range []string{
		`{"path":"f.txt","old_string":"one","new_string":"1"}`,
		`{"path":"f.txt","old_string":"two","new_string":"2"}`,
		`{"path":"f.txt","old_string":"three","new_string":"3"}`,
	} {
		if res := callFileTool(t, s, EditFile(), args); res.IsError {
			t.Fatalf("%s: %s", args, res.Text)
		}
	}
	got, err := os.ReadFile(filepath.Join(s.Workspace.Root(), "f.txt"))
	if err != nil || string(got) != "1\n2\n3\n" {
		t.Fatalf("file holds %q, %v", got, err)
	}
}

func TestEditFileKeepsModeAndLeavesNoTemp(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	abs := writeFile(t, s, "run.sh", "#!/bin/sh\necho hi\n")
	if err := os.Chmod(abs, 0o750); err != nil {
		t.Fatal(err)
	}
	readWithTool(t, s, "run.sh")
	if res := callFileTool(t, s, EditFile(), `{"path":"run.sh","old_string":"hi","new_string":"ho"}`); res.IsError {
		t.Fatal(res.Text)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o750 {
		t.Errorf("mode is %v, want 0750", fi.Mode().Perm())
	}
	entries, err := os.ReadDir(s.Workspace.Root())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("workspace holds %d entries after the edit, want only run.sh: %v", len(entries), entries)
	}
}

func TestEditFileThroughSymlinkInside(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	target := writeFile(t, s, "real.txt", "old\n")
	if err := os.Symlink("real.txt", filepath.Join(s.Workspace.Root(), "alias.txt")); err != nil {
		t.Fatal(err)
	}
	readWithTool(t, s, "alias.txt")
	res := callFileTool(t, s, EditFile(), `{"path":"alias.txt","old_string":"old","new_string":"new"}`)
	if res.IsError || res.Text != "Edited real.txt: replaced 1 occurrence(s) (lines 1-1)" {
		t.Fatalf("got %+v", res)
	}
	if got, _ := os.ReadFile(target); string(got) != "new\n" {
		t.Fatalf("target holds %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(s.Workspace.Root(), "alias.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced: %v, %v", fi, err)
	}
}

func TestEditFileConfinement(t *testing.T) {
	t.Parallel()
	checkToolConfined(t, EditFile(), func(p string) string {
		return fmt.Sprintf(`{"path":%q,"old_string":"top secret","new_string":"changed"}`, p)
	})
	checkToolConfined(t, EditFile(), func(p string) string {
		return fmt.Sprintf(`{"path":%q,"old_string":"","new_string":"created"}`, p)
	})
}

func TestEditFileLooseMatchReindent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, ws, old, repl, want string
	}{
		{"tabs_file_spaces_model", "\tif a {\n\t\tb()\n\t}\n",
			"    if a {\n        b()\n    }\n", "    if a {\n        b()\n        c()\n    }\n",
			"\tif a {\n\t\tb()\n\t\tc()\n\t}\n"},
		{"dedent_below_base", "\t\tx()\n",
			"        x()\n", "        x()\n    y()\n",
			"\t\tx()\n\ty()\n"},
		{"blank_lines_stay_blank", "  a\n  b\n",
			"a\nb\n", "a\n   \nb\n",
			"  a\n\n  b\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := looseMatches(c.ws, c.old, c.repl)
			if len(m) != 1 {
				t.Fatalf("got %d matches, want 1", len(m))
			}
			got := c.ws[:m[0].start] + m[0].repl + c.ws[m[0].end:]
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// FuzzEditFileLoose checks that the whitespace-tolerant matcher never
// panics and that its matches are ordered, disjoint ranges of the content.
func FuzzEditFileLoose(f *testing.F) {
	f.Add("\tif a {\n\t\tb()\n\t}\n", "    if a {\n        b()\n", "  x\n\ty\n")
	f.Add("a\r\n  b\r\n", "b", "c\n d")
	f.Fuzz(func(t *testing.T, content, old, repl string) {
		prev := 0
		for _, m := range looseMatches(content, old, repl) {
			if m.start < prev || m.end < m.start || m.end > len(content) {
				t.Fatalf("bad match %d-%d (previous end %d, len %d)", m.start, m.end, prev, len(content))
			}
			prev = m.end
		}
	})
}

// TestFileToolsThroughExecutor runs the file tools as an agent's turns do,
// through the real executor with its cache: a cached read is served again,
// an edit invalidates it, two edits of one file in one turn are applied in
// call order, and a new file shows up in a directory listing at once.
func TestFileToolsThroughExecutor(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "f.txt", "alpha\nbeta\n")
	ex := &Executor{Tools: NewRegistry(ReadFile(), EditFile(), WriteFile(), ListDir()), Session: s}
	turn := func(pairs ...string) []Result {
		t.Helper()
		var cs []messages.ToolCall
		for i := 0; i+1 < len(pairs); i += 2 {
			cs = append(cs, messages.ToolCall{ID: fmt.Sprint(i), Name: pairs[i], Args: json.RawMessage(pairs[i+1])})
		}
		rs := ex.Run(context.Background(), cs)
		for i, r := range rs {
			if r.IsError {
				t.Fatalf("%s: %s", pairs[2*i], r.Text)
			}
		}
		return rs
	}
	read := `{"path":"f.txt"}`
	if r := turn("read_file", read)[0]; r.Text != "L1: alpha\nL2: beta" || r.Cached {
		t.Fatalf("first read: %+v", r)
	}
	if r := turn("read_file", read)[0]; !r.Cached {
		t.Fatalf("second read was not served from the cache: %+v", r)
	}
	turn("edit_file", `{"path":"f.txt","old_string":"alpha","new_string":"ALPHA"}`,
		"edit_file", `{"path":"f.txt","old_string":"ALPHA\nbeta","new_string":"ALPHA\nBETA"}`)
	if r := turn("read_file", read)[0]; r.Text != "L1: ALPHA\nL2: BETA" || r.Cached {
		t.Fatalf("read after the edits: %+v", r)
	}
	if r := turn("list_dir", `{}`)[0]; r.Text != "Absolute path: .\nf.txt" {
		t.Fatalf("listing: %q", r.Text)
	}
	turn("write_file", `{"path":"g.txt","content":"new\n"}`)
	if r := turn("list_dir", `{}`)[0]; r.Text != "Absolute path: .\nf.txt\ng.txt" || r.Cached {
		t.Fatalf("listing after write_file: %+v", r)
	}
}
