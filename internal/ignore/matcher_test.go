package ignore

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestIgnored(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		".gitignore":        "*.log\n/build/\n",
		".ignore":           "!important.log\nscratch/\n",
		"sub/.gitignore":    "!*.log\n",
		"sub/.ignore":       "*.tmp\n",
		"nested/.git/HEAD":  "ref: refs/heads/main\n",
		"nested/.gitignore": "*.bin\n",
		".git/info/exclude": "private/\n",
	})
	cases := []struct {
		path  string
		isDir bool
		want  bool
	}{
		{"a.log", false, true},
		{"important.log", false, false}, // .ignore beats .gitignore
		{"sub/a.log", false, false},     // the deeper .gitignore re-includes
		{"sub/x.tmp", false, true},
		{"x.tmp", false, false}, // sub/.ignore applies only below sub
		{"build", true, true},
		{"build", false, false}, // directory-only rule
		{"build/out.o", false, true},
		{"src/build", true, false}, // anchored at the root
		{"scratch/notes.txt", false, true},
		{"private/key", false, true},
		{".git", true, true},
		{".git/config", false, true},
		{"sub/.git", false, true}, // a .git file (worktree) too
		{"nested/x.bin", false, true},
		{"nested/x.log", false, false}, // gitignores above a nested repo stop at it
		{"", true, false},              // the root itself
		{"main.go", false, false},
	}
	m := NewMatcher(root)
	for _, c := range cases {
		if got := m.Ignored(filepath.Join(root, c.path), c.isDir); got != c.want {
			t.Errorf("Ignored(%q, dir=%v) = %v, want %v", c.path, c.isDir, got, c.want)
		}
	}
}

func TestMatchLooksOnlyAtThePath(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{".gitignore": "vendor\n"})
	m := NewMatcher(root)
	file := filepath.Join(root, "vendor", "lib.go")
	if m.Match(file, false) {
		t.Errorf("Match(vendor/lib.go) = true; only the directory matches the rule")
	}
	if !m.Ignored(file, false) {
		t.Errorf("Ignored(vendor/lib.go) = false; its parent directory is ignored")
	}
	if !m.Match(filepath.Join(root, "vendor"), true) {
		t.Errorf("Match(vendor) = false")
	}
}

func TestOutsideRoot(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{".gitignore": "*\n"})
	m := NewMatcher(root)
	for _, p := range []string{filepath.Dir(root), root + "-other/x", "/etc/passwd", "relative/x"} {
		if m.Ignored(p, false) {
			t.Errorf("Ignored(%q) = true for a path outside the root", p)
		}
	}
}

func TestRelativeRoot(t *testing.T) {
	root := writeTree(t, map[string]string{".gitignore": "*.o\n"})
	t.Chdir(root)
	m := NewMatcher(".")
	if !m.Ignored(filepath.Join(root, "a.o"), false) {
		t.Errorf("a matcher made from a relative root does not apply its rules")
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	files := map[string]string{".gitignore": "*.skip\n"}
	for i := range 20 {
		files[fmt.Sprintf("d%d/.gitignore", i)] = fmt.Sprintf("f%d\n", i)
	}
	root := writeTree(t, files)
	m := NewMatcher(root)
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				d := (i + g) % 20
				if !m.Ignored(filepath.Join(root, fmt.Sprintf("d%d/f%d", d, d)), false) {
					errs <- fmt.Sprintf("d%d/f%d not ignored", d, d)
				}
				if m.Ignored(filepath.Join(root, fmt.Sprintf("d%d/f%d", d, d+1)), false) {
					errs <- fmt.Sprintf("d%d/f%d ignored", d, d+1)
				}
				if !m.Ignored(filepath.Join(root, fmt.Sprintf("d%d/x.skip", d)), false) {
					errs <- fmt.Sprintf("d%d/x.skip not ignored", d)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestParseRuleSkipsInvalid(t *testing.T) {
	t.Parallel()
	for _, line := range []string{"", "   ", "# comment", "!", "/", "[unclosed"} {
		if _, ok := parseRule(line); ok {
			t.Errorf("parseRule(%q) accepted a line git ignores", line)
		}
	}
}

func BenchmarkIgnored(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.o\n/build/\nnode_modules\n**/gen/*.go\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	m := NewMatcher(dir)
	p := filepath.Join(dir, "a", "b", "c", "file.go")
	b.ReportAllocs()
	for b.Loop() {
		m.Ignored(p, false)
	}
}
