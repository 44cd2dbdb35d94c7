package tools

import (
	"encoding/json"
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
		{FindFiles(), `{"pattern":"*.txt*"}`},
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

// A file literally named "a.txt", quotes and all, beside a.txt: listings
// show it quoted, so its plain form can only mean a.txt, and reads and
// writes given the listed form act on it, never on a.txt.
func TestQuotedLookingNamesAreUnambiguous(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	root := s.Workspace.Root()
	writeFile(t, s, "a.txt", "plain needle\n")
	writeFile(t, s, `"a.txt"`, "quoted needle\n")
	writeFile(t, s, `sub/"b.txt"`, "nested needle\n")
	writeFile(t, s, "sub/b.txt", "plain nested\n")
	listed := `"\"a.txt\""`
	for _, c := range []struct {
		tool Tool
		args string
		want []string
	}{
		{ListDir(), `{}`, []string{"\n" + listed + "\n", "\na.txt\n", `  "\"b.txt\""`}},
		{FindFiles(), `{"pattern":"*.txt*"}`, []string{"\n" + listed + "\n", "\na.txt\n", `"sub/\"b.txt\""`}},
		{Grep(), `{"pattern":"needle"}`, []string{"\n" + listed + "\n", "\na.txt\n", `"sub/\"b.txt\""`}},
		{Grep(), `{"pattern":"quoted needle","mode":"content"}`, []string{listed + ":1: quoted needle"}},
	} {
		r := runTool(t, c.tool, s, c.args)
		text := "\n" + r.Text + "\n"
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s %s lacks %q:\n%s", c.tool.Spec().Name, c.args, w, r.Text)
			}
		}
		for _, line := range strings.Split(r.Text, "\n") {
			if name := strings.TrimSpace(line); strings.HasPrefix(name, `"a.txt"`) || strings.HasPrefix(name, `"b.txt"`) {
				t.Errorf("%s shows a quoted-looking name plain: %q", c.tool.Spec().Name, line)
			}
		}
	}

	read := func(path string) string {
		args, _ := json.Marshal(map[string]string{"path": path})
		r := runTool(t, ReadFile(), s, string(args))
		if r.IsError {
			t.Fatalf("read_file %s: %s", path, r.Text)
		}
		return r.Text
	}
	for path, want := range map[string]string{
		listed:                      "L1: quoted needle", // as find_files and grep list it
		"a.txt":                     "L1: plain needle",  // the plain name is a.txt
		`sub/"\"b.txt\""`:           "L1: nested needle", // list_dir's name joined to its folder
		`"sub/\"b.txt\""`:           "L1: nested needle", // find_files' whole path
		`sub/b.txt`:                 "L1: plain nested",  // plain again
		`"sub/b.txt"`:               "L1: plain nested",  // a quoted plain path is that path
		`"\"a.txt\"" and more"`:     "",                  // not a quoted string: left as it is
		`sub/"b.txt"`:               "L1: plain nested",  // a quoted component is unquoted
		filepath.Join(root, listed): "L1: quoted needle", // the root joined to the listed form
	} {
		if want == "" {
			args, _ := json.Marshal(map[string]string{"path": path})
			if r := runTool(t, ReadFile(), s, string(args)); !r.IsError {
				t.Errorf("read_file %s found a file: %s", path, r.Text)
			}
			continue
		}
		if got := read(path); got != want {
			t.Errorf("read_file %s: %q, want %q", path, got, want)
		}
	}

	// Writes land on the file the listed form names.
	write := func(path, content string) {
		args, _ := json.Marshal(map[string]string{"path": path, "content": content})
		if r := runTool(t, WriteFile(), s, string(args)); r.IsError {
			t.Fatalf("write_file %s: %s", path, r.Text)
		}
	}
	read(listed)
	write(listed, "quoted rewritten\n")
	write(`"\"new.txt\""`, "new quoted\n")
	write(`sub/"\"c.txt\""`, "new nested\n")
	for name, want := range map[string]string{`"a.txt"`: "quoted rewritten\n", "a.txt": "plain needle\n",
		`"new.txt"`: "new quoted\n", `sub/"c.txt"`: "new nested\n"} {
		if got, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(got) != want {
			t.Errorf("%s holds %q (%v), want %q", name, got, err, want)
		}
	}
	for _, name := range []string{"new.txt", "sub/c.txt"} {
		if _, err := os.Stat(filepath.Join(root, name)); err == nil {
			t.Errorf("a write of the quoted name created %s", name)
		}
	}
}

// listPath and unquotePath round-trip every name, as a whole path and as
// list_dir's name joined to its listed folder; a name listed plain is
// taken as it is.
func TestListPathRoundTrip(t *testing.T) {
	t.Parallel()
	names := []string{"a.txt", `"a.txt"`, `"`, `""`, `a"b`, `"a`, `a"`, "evil\nname", "tab\there", "x\xffy",
		`"\n"`, `\"x\"`, "é", "with space", `"x\x2fy"`, `dir/"q"`, "dir/plain", `"dir"/x`, "-rf", "\u202eevil"}
	for _, n := range names {
		if got := unquotePath(listPath(n)); got != n {
			t.Errorf("%q listed as %q comes back as %q", n, listPath(n), got)
		}
		if l := listPath(n); l == n && unquotePath(n) != n {
			t.Errorf("%q is listed plain but taken for %q", n, unquotePath(n))
		}
		if strings.Contains(n, "/") {
			continue
		}
		for _, dir := range []string{"sub", `"q"`, "a\nb"} {
			joined := listPath(dir) + "/" + listPath(n)
			if got := unquotePath(joined); got != dir+"/"+n {
				t.Errorf("%q comes back as %q, want %q", joined, got, dir+"/"+n)
			}
		}
	}
}
