package tools

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// listDirTree builds the workspace the list_dir goldens describe.
func listDirTree(t *testing.T) *Session {
	t.Helper()
	s := newTestSession(t)
	for rel, content := range map[string]string{
		".gitignore":               "build/\n*.log\n!keep.log\n",
		".github/workflows/ci.yml": "on: push\n",
		".git/HEAD":                "ref: refs/heads/main\n",
		".git/config":              "",
		"README.md":                "# demo\n",
		"B.txt":                    "upper case sorts first\n",
		"app.log":                  "ignored\n",
		"keep.log":                 "re-included\n",
		"build/out.bin":            "ignored dir\n",
		"src/main.go":              "package main\n",
		"src/.gitignore":           "gen/\n",
		"src/gen/g.go":             "package gen\n",
		"src/util/strings.go":      "package util\n",
		"src/util/deep/x.go":       "package deep\n",
	} {
		writeFile(t, s, rel, content)
	}
	root := s.Workspace.Root()
	if err := os.Mkdir(filepath.Join(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", filepath.Join(root, "dangling")); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestListDirGolden(t *testing.T) {
	t.Parallel()
	s := listDirTree(t)
	cases := []struct{ name, args string }{
		{"default", `{}`},
		{"root_dot", `{"path":"."}`},
		{"depth_1", `{"depth":1}`},
		{"depth_4", `{"depth":4}`},
		{"subdir", `{"path":"src"}`},
		{"subdir_trailing_slash", `{"path":"src/util/"}`},
		{"limit", `{"limit":3}`},
		{"second_page", `{"limit":3,"offset":4}`},
		{"last_page", `{"limit":10,"offset":12}`},
		{"exact_fit", `{"depth":1,"limit":9}`},
		{"offset_past_end", `{"offset":40}`},
		{"empty_dir", `{"path":"empty"}`},
		{"ignored_dir_named", `{"path":"build"}`},
		{"through_symlink", `{"path":"link"}`},
		{"file", `{"path":"README.md"}`},
		{"missing_similar", `{"path":"srcc"}`},
		{"missing", `{"path":"nothing/here"}`},
		{"bad_depth", `{"depth":0}`},
		{"bad_limit", `{"limit":-1}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			golden(t, "list_dir/"+c.name, resultForGolden(callFileTool(t, s, ListDir(), c.args)))
		})
	}
}

// TestListDirPagesCoverTree pages through a tree one entry at a time and
// checks that the pages, joined, are the single full listing.
func TestListDirPagesCoverTree(t *testing.T) {
	t.Parallel()
	s := listDirTree(t)
	full := callFileTool(t, s, ListDir(), `{"depth":5,"limit":1000}`)
	if full.IsError {
		t.Fatal(full.Text)
	}
	want := strings.Split(full.Text, "\n")[1:]
	var got []string
	for off := 1; ; off++ {
		res := callFileTool(t, s, ListDir(), fmt.Sprintf(`{"depth":5,"limit":1,"offset":%d}`, off))
		if res.IsError {
			t.Fatalf("offset %d: %s", off, res.Text)
		}
		lines := strings.Split(res.Text, "\n")
		got = append(got, lines[1])
		if len(lines) == 2 {
			break
		}
		if tail := fmt.Sprintf("More than %d entries found; use offset=%d to see more", off, off+1); lines[2] != tail {
			t.Fatalf("offset %d: trailer %q, want %q", off, lines[2], tail)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("pages joined:\n%s\nfull listing:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestListDirDoesNotFollowSymlinkOut(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(s.Workspace.Root(), "out")); err != nil {
		t.Fatal(err)
	}
	res := callFileTool(t, s, ListDir(), `{"depth":5}`)
	if res.IsError || res.Text != "Absolute path: .\nout@" {
		t.Fatalf("got %+v, want the symlink listed and not followed", res)
	}
	res = callFileTool(t, s, ListDir(), `{"path":"out"}`)
	if !res.IsError || !strings.Contains(res.Text, "outside the workspace") {
		t.Fatalf("listing a symlink to a directory outside: got %+v", res)
	}
}

func TestListDirConfinement(t *testing.T) {
	t.Parallel()
	checkToolConfined(t, ListDir(), func(p string) string {
		return fmt.Sprintf(`{"path":%q}`, p)
	})
}

func TestListDirEntryLabel(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 600)
	cases := []struct {
		name string
		typ  fs.FileMode
		want string
	}{
		{"a.go", 0, "a.go"},
		{"pkg", fs.ModeDir, "pkg/"},
		{"ln", fs.ModeSymlink, "ln@"},
		// Linux caps names at 255 bytes, so only a direct call reaches the cut.
		{long, 0, strings.Repeat("é", 500) + "..."},
		{"bad\xffname", 0, `"bad\xffname"`}, // quoted, so it can be given back
	}
	for _, c := range cases {
		if got := entryLabel(c.name, c.typ); got != c.want {
			t.Errorf("entryLabel(%.20q, %v) = %.30q, want %.30q", c.name, c.typ, got, c.want)
		}
	}
}
