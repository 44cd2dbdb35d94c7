package ignore

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/peer"
)

// gitCase is a tree of files (path → content; rule files included) whose
// set of non-ignored files git itself decides.
type gitCase struct {
	name  string
	files map[string]string
}

var gitCases = []gitCase{
	{"basename at any depth", map[string]string{
		".gitignore": "*.o\nbuild\n",
		"a.o":        "", "a.c": "", "src/b.o": "", "src/b.c": "", "build/x": "", "src/build/y": "", "src/builder/z": "",
	}},
	{"anchored and middle slash", map[string]string{
		".gitignore": "/top.txt\ndoc/*.txt\n",
		"top.txt":    "", "sub/top.txt": "", "doc/a.txt": "", "doc/sub/b.txt": "", "doc/a.md": "", "x/doc/c.txt": "",
	}},
	{"directory only", map[string]string{
		".gitignore": "cache/\nlog/\n",
		"cache/a":    "", "src/cache/b": "", "log": "a file named log", "src/log/c": "",
	}},
	{"negation", map[string]string{
		".gitignore": "*.log\n!keep.log\n",
		"a.log":      "", "keep.log": "", "sub/keep.log": "", "sub/b.log": "",
	}},
	{"negation cannot reach into an excluded directory", map[string]string{
		".gitignore":     "vendor/\n!vendor/keep.go\n",
		"vendor/keep.go": "", "vendor/other.go": "", "main.go": "",
	}},
	{"re-include through a wildcard", map[string]string{
		".gitignore": "/out/*\n!/out/keep\n",
		"out/a":      "", "out/keep": "", "out/sub/c": "",
	}},
	{"nested gitignore overrides parent", map[string]string{
		".gitignore": "*.gen\n", "pkg/.gitignore": "!*.gen\nlocal.txt\n",
		"a.gen": "", "pkg/b.gen": "", "pkg/local.txt": "", "local.txt": "", "pkg/deep/c.gen": "",
	}},
	{"nested anchored rule is relative to its directory", map[string]string{
		"pkg/.gitignore": "/tmp\n/sub/file\n",
		"tmp/a":          "", "pkg/tmp/b": "", "pkg/x/tmp/c": "", "pkg/sub/file": "", "sub/file": "",
	}},
	{"double star forms", map[string]string{
		".gitignore": "**/logs\nfoo/**\na/**/z\n**/gen/*.go\n",
		"logs/1":     "", "x/y/logs/2": "", "foo/bar": "", "foo/baz/q": "", "foos": "",
		"a/z": "", "a/b/z": "", "a/b/c/z": "", "a/b/y": "", "gen/x.go": "", "p/gen/y.go": "", "p/gen/sub/z.go": "",
	}},
	{"character classes and question mark", map[string]string{
		".gitignore": "file[0-9].txt\n[!a]?.md\n",
		"file1.txt":  "", "filex.txt": "", "file10.txt": "", "ab.md": "", "bb.md": "", "b.md": "",
	}},
	{"comments escapes and trailing spaces", map[string]string{
		".gitignore": "# comment\n\\#hash\n\\!bang\nspaced   \n\n",
		"#hash":      "", "!bang": "", "spaced": "", "comment": "", "# comment": "",
	}},
	{"crlf rule file", map[string]string{
		".gitignore": "*.tmp\r\n/dist\r\n",
		"a.tmp":      "", "dist/x": "", "src/dist/y": "", "keep.go": "",
	}},
	{"braces are literal", map[string]string{
		".gitignore": "{a,b}.txt\n",
		"a.txt":      "", "{a,b}.txt": "",
	}},
	{"info exclude", map[string]string{
		".git/info/exclude": "secret*\n",
		"secret.txt":        "", "sub/secret.key": "", "public.txt": "",
	}},
	{"gitignore beats info exclude", map[string]string{
		".git/info/exclude": "*.dat\n", ".gitignore": "!keep.dat\n",
		"a.dat": "", "keep.dat": "",
	}},
	{"star does not cross slash", map[string]string{
		".gitignore": "a*b\nsrc/*.c\n",
		"axb":        "", "a/b": "", "src/x.c": "", "src/y/z.c": "",
	}},
	{"dot files match star", map[string]string{
		".gitignore": "*.swp\n.env*\n",
		".main.swp":  "", ".env": "", ".env.local": "", "env": "",
	}},
}

// gitEnv isolates git from the user's global configuration.
func gitEnv(t *testing.T) []string {
	home := t.TempDir()
	return append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home,
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
}

func TestAgainstGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		peer.Missing(t, "git", "not on PATH; the git differential test needs it")
	}
	for _, tc := range gitCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cmd := exec.Command("git", "init", "-q", dir)
			cmd.Env = gitEnv(t)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git init: %v\n%s", err, out)
			}
			for rel, content := range tc.files {
				p := filepath.Join(dir, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd = exec.Command("git", "ls-files", "--others", "--exclude-standard", "-z")
			cmd.Dir, cmd.Env = dir, gitEnv(t)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("git ls-files: %v", err)
			}
			var want []string
			for _, p := range strings.Split(string(out), "\x00") {
				if p != "" {
					want = append(want, p)
				}
			}
			slices.Sort(want)
			got := notIgnored(t, dir)
			if !slices.Equal(got, want) {
				t.Errorf("rules:\n%s\nnot ignored, ours: %q\nnot ignored, git:  %q", rulesOf(tc), got, want)
			}
		})
	}
}

// notIgnored lists the files under dir that Ignored lets through, asking
// about every file (not pruning directories) so the ancestor logic is
// exercised too.
func notIgnored(t *testing.T, dir string) []string {
	t.Helper()
	m := NewMatcher(dir)
	var got []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !m.Ignored(p, false) {
			rel, _ := filepath.Rel(dir, p)
			got = append(got, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}

func rulesOf(tc gitCase) string {
	var b strings.Builder
	for rel, c := range tc.files {
		if strings.HasSuffix(rel, ".gitignore") || strings.HasSuffix(rel, "exclude") {
			b.WriteString(rel + ":\n" + c)
		}
	}
	return b.String()
}
