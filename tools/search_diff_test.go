package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/peer"
)

// diffQuery is one grep call and the ripgrep arguments with the same
// meaning (ours is smart-case and CRLF-aware by default; rg needs -S and
// --crlf for that).
type diffQuery struct {
	args string
	rg   []string
}

var moduleQueries = []diffQuery{
	{`{"pattern": "func"}`, []string{"-l", "-S", "func"}},
	{`{"pattern": "Errorf"}`, []string{"-l", "-S", "Errorf"}},
	{`{"pattern": "Session|Workspace"}`, []string{"-l", "-S", "Session|Workspace"}},
	{`{"pattern": "[A-Z][a-z]+Error"}`, []string{"-l", "-S", "[A-Z][a-z]+Error"}},
	{`{"pattern": "context", "type": "go"}`, []string{"-l", "-S", "-t", "go", "context"}},
	{`{"pattern": "t.Run", "include": "*_test.go"}`, []string{"-l", "-S", "-g", "*_test.go", "t.Run"}},
	{`{"pattern": "package", "include": "!*.go"}`, []string{"-l", "-S", "-g", "!*.go", "package"}},
	{`{"pattern": "the", "type": "md"}`, []string{"-l", "-S", "-t", "md", "the"}},
	{`{"pattern": "a.b", "literal": true}`, []string{"-l", "-S", "-F", "a.b"}},
	{`{"pattern": "\\d{3,}"}`, []string{"-l", "-S", `\d{3,}`}},
	{`{"pattern": "json", "case_sensitive": false}`, []string{"-l", "-i", "json"}},
	{`{"pattern": "return nil", "mode": "count"}`, []string{"-c", "-S", "return nil"}},
	{`{"pattern": "TODO|FIXME", "mode": "count"}`, []string{"-c", "-S", "TODO|FIXME"}},
	{`{"pattern": "^import", "mode": "count"}`, []string{"-c", "-S", "^import"}},
	{`{"pattern": "e", "invert": true, "mode": "count"}`, []string{"-c", "-S", "-v", "e"}},
	{`{"pattern": "err != nil\\s*\\{\\n\\s*return", "multiline": true, "mode": "count"}`, []string{"-c", "-S", "-U", `err != nil\s*\{\n\s*return`}},
	{`{"pattern": "^$", "mode": "count"}`, []string{"-c", "-S", "--crlf", "^$"}},
}

var fixtureQueries = []diffQuery{
	{`{"pattern": "todo"}`, []string{"-l", "-S", "todo"}},
	{`{"pattern": "TODO", "mode": "count"}`, []string{"-c", "-S", "TODO"}},
	{`{"pattern": "todo", "mode": "count"}`, []string{"-c", "-S", "todo"}},
	{`{"pattern": "καλημέρα"}`, []string{"-l", "-S", "καλημέρα"}},
	{`{"pattern": "line$", "mode": "count"}`, []string{"-c", "-S", "--crlf", "line$"}},
	{`{"pattern": "^$", "mode": "count"}`, []string{"-c", "-S", "--crlf", "^$"}},
	{`{"pattern": "e", "invert": true, "mode": "count"}`, []string{"-c", "-S", "-v", "e"}},
	{`{"pattern": "package", "type": "go", "mode": "count"}`, []string{"-c", "-S", "-t", "go", "package"}},
	{`{"pattern": "begin\\s+\\w+", "multiline": true, "mode": "count"}`, []string{"-c", "-S", "-U", `begin\s+\w+`}},
}

var globQueries = []string{"*.go", "*_test.go", "*.{md,yaml}", "*config*", "testdata", "README*", "*.TXT"}

func TestSearchMatchesRipgrepAndFd(t *testing.T) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		peer.Missing(t, "rg", "rg (ripgrep) is not on PATH; the differential test needs it (apt-get install ripgrep)")
	}
	fd := ""
	for _, name := range []string{"fd", "fdfind"} {
		if p, err := exec.LookPath(name); err == nil {
			fd = p
			break
		}
	}
	fixture := newTestSession(t)
	buildSearchTree(t, fixture.Workspace.Root())
	module := moduleCopySession(t)
	for _, tree := range []struct {
		name    string
		s       *Session
		queries []diffQuery
	}{{"module", module, moduleQueries}, {"fixture", fixture, fixtureQueries}} {
		for _, q := range tree.queries {
			t.Run(tree.name+"/grep "+q.args, func(t *testing.T) {
				t.Parallel()
				theirs := runExternal(t, tree.s, rg, append([]string{"--no-config"}, q.rg...)...)
				ours := ourPaths(t, tree.s, Grep(), q.args)
				compareSets(t, ours, theirs)
			})
		}
		for _, g := range globQueries {
			t.Run(tree.name+"/find_files "+g, func(t *testing.T) {
				if fd == "" {
					peer.Missing(t, "fd", "neither fd nor fdfind is on PATH (apt-get install fd-find)")
				}
				t.Parallel()
				theirs := runExternal(t, tree.s, fd, "--glob", g)
				ours := ourPaths(t, tree.s, FindFiles(), fmt.Sprintf(`{"pattern": %q}`, g))
				compareSets(t, ours, theirs)
			})
		}
	}
}

// moduleCopySession copies the module's source tree (found from the test's
// working directory) into a temporary workspace, so that edits made while
// the test runs cannot make the two searches disagree. The copy keeps
// every regular file under 1 MB and marks its root as a repository.
func moduleCopySession(t *testing.T) *Session {
	t.Helper()
	src, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		t.Skipf("the module root is not the parent of the test's directory: %v", err)
	}
	s := newTestSession(t)
	dst := s.Workspace.Root()
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walk
			}
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.Name() == ".git" { // a directory in a clone, a file in a git worktree
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil || len(data) > 1<<20 {
			return nil
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dst, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// runExternal runs rg or fd in the workspace root and returns its output
// lines as workspace-relative paths (counts kept as "path: N").
func runExternal(t *testing.T, s *Session, bin string, args ...string) []string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = s.Workspace.Root()
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) { // 1: nothing found
		t.Fatalf("%s %q: %v", bin, args, err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l == "" {
			continue
		}
		l = strings.TrimPrefix(strings.TrimSuffix(l, "\r"), "./") // --crlf ends lines with \r\n
		if i := strings.LastIndexByte(l, ':'); i > 0 && slices.Contains(args, "-c") {
			l = l[:i] + ": " + l[i+1:] // rg -c writes path:N
		}
		lines = append(lines, l)
	}
	return lines
}

// ourPaths runs our tool and returns its result lines, following its
// "[more results: use offset=N]" pages as an agent would (the tools cap a
// page: find_files at 1,000 paths, more than this module's *.go files).
func ourPaths(t *testing.T, s *Session, tool Tool, args string) []string {
	t.Helper()
	var lines []string
	for offset, pages := 0, 0; ; pages++ {
		if pages == 20 {
			t.Fatalf("%s %s: more than 20 pages; the query is too broad to compare", tool.Spec().Name, args)
		}
		page := strings.TrimSuffix(args, "}") + fmt.Sprintf(`, "limit": 2000, "offset": %d}`, offset)
		res := runTool(t, tool, s, page)
		if res.IsError {
			t.Fatalf("%s %s: %s", tool.Spec().Name, page, res.Text)
		}
		if strings.HasPrefix(res.Text, "No matches for ") || strings.HasPrefix(res.Text, "No files match ") {
			return lines
		}
		got := strings.Split(res.Text, "\n")
		last := got[len(got)-1]
		if !strings.HasPrefix(last, "[more results: use offset=") {
			return append(lines, got...)
		}
		lines = append(lines, got[:len(got)-1]...)
		next, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(last, "[more results: use offset="), "]"))
		if err != nil || next <= offset {
			t.Fatalf("%s %s: a page ends %q", tool.Spec().Name, page, last)
		}
		offset = next
	}
}

func compareSets(t *testing.T, ours, theirs []string) {
	t.Helper()
	onlyOurs, onlyTheirs := setMinus(ours, theirs), setMinus(theirs, ours)
	if len(onlyOurs)+len(onlyTheirs) > 0 {
		t.Errorf("results differ (%d ours, %d theirs)\nonly ours:   %q\nonly theirs: %q",
			len(ours), len(theirs), head(onlyOurs), head(onlyTheirs))
	}
	if len(ours) == 0 && len(theirs) == 0 {
		t.Logf("both found nothing")
	}
}

func setMinus(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

func head(xs []string) []string { return xs[:min(len(xs), 10)] }
