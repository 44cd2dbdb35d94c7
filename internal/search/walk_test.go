package search

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// makeTree writes files (path → content) under a new temporary directory.
func makeTree(t testing.TB, files map[string]string) string {
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

// collect walks and returns the root-relative paths visited, sorted.
func collect(t *testing.T, tg Target, dirs bool) []string {
	t.Helper()
	var mu sync.Mutex
	var got []string
	err := walk(new(atomic.Bool), tg, dirs, func(_ int, e Entry) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, relTo(tg.Root, e.Path))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}

func TestWalk(t *testing.T) {
	t.Parallel()
	root := makeTree(t, map[string]string{
		".gitignore":       "*.o\nbuild/\n",
		"a.go":             "",
		"a.o":              "",
		"build/x":          "",
		".hidden/y":        "",
		".env":             "",
		"src/b.go":         "",
		"src/.gitignore":   "gen/\n",
		"src/gen/c.go":     "",
		"src/deep/d/e.txt": "",
		".git/config":      "",
	})
	if err := os.Symlink("src", filepath.Join(root, "link")); err != nil {
		t.Skip("no symbolic links here")
	}
	files := []string{"a.go", "link", "src/b.go", "src/deep/d/e.txt"}
	withDirs := []string{"a.go", "link", "src", "src/b.go", "src/deep", "src/deep/d", "src/deep/d/e.txt"}
	for _, workers := range []int{1, 2, 8} {
		tg := Target{Root: root, Path: root, Workers: workers}
		if got := collect(t, tg, false); !slices.Equal(got, files) {
			t.Errorf("workers %d: files %q, want %q", workers, got, files)
		}
		if got := collect(t, tg, true); !slices.Equal(got, withDirs) {
			t.Errorf("workers %d: with dirs %q, want %q", workers, got, withDirs)
		}
	}
	// A path given explicitly is walked even when hidden or ignored; what
	// lies below it still obeys the rules.
	tg := Target{Root: root, Path: filepath.Join(root, "build")}
	if got := collect(t, tg, false); !slices.Equal(got, []string{"build/x"}) {
		t.Errorf("explicit ignored dir: %q", got)
	}
	tg = Target{Root: root, Path: filepath.Join(root, ".hidden", "y")}
	if got := collect(t, tg, false); !slices.Equal(got, []string{".hidden/y"}) {
		t.Errorf("explicit hidden file: %q", got)
	}
}

func TestWalkMissing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	err := walk(new(atomic.Bool), Target{Root: root, Path: filepath.Join(root, "nope")}, false,
		func(int, Entry) error { return nil })
	if !os.IsNotExist(err) {
		t.Errorf("walk of a missing path: %v, want not-exist", err)
	}
}

// TestWalkStops raises the stop flag from the first visit; the walk must
// end with errStopped long before it has seen the whole tree.
func TestWalkStops(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 400 {
		files[fmt.Sprintf("d%02d/f%03d", i%40, i)] = ""
	}
	root := makeTree(t, files)
	stopped := new(atomic.Bool)
	var visits atomic.Int64
	err := walk(stopped, Target{Root: root, Path: root, Workers: 4}, false, func(int, Entry) error {
		visits.Add(1)
		stopped.Store(true)
		return nil
	})
	if err != errStopped {
		t.Errorf("walk returned %v, want errStopped", err)
	}
	if n := visits.Load(); n > 4 { // at most one visit per worker in flight
		t.Errorf("%d visits after the stop, want at most one per worker", n)
	}
}

func TestGrepCancelled(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("d%d/f%d.txt", i%10, i)] = "nothing\n"
	}
	root := makeTree(t, files)
	p, _ := CompilePattern("x", PatternOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Grep(ctx, Target{Root: root, Path: root}, p, GrepOptions{}); err != context.Canceled {
		t.Errorf("Grep with a cancelled context: %v", err)
	}
	g, _ := CompileGlob("*", false)
	if _, err := Find(ctx, Target{Root: root, Path: root}, g); err != context.Canceled {
		t.Errorf("Find with a cancelled context: %v", err)
	}
}

func TestGrepOrderAndModes(t *testing.T) {
	t.Parallel()
	root := makeTree(t, map[string]string{"old.txt": "hit\nhit\n", "new.txt": "hit\n", "mid.txt": "miss\nhit\n", "b.txt": "hit\n"})
	base := fixedTime()
	for i, name := range []string{"old.txt", "mid.txt", "new.txt", "b.txt"} {
		mt := base.Add(minutes(i))
		if name == "b.txt" {
			mt = base.Add(minutes(2)) // ties with new.txt: path order decides
		}
		if err := os.Chtimes(filepath.Join(root, name), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := CompilePattern("hit", PatternOptions{})
	hits, err := Grep(t.Context(), Target{Root: root, Path: root}, p, GrepOptions{Mode: ModeLines, KeepLines: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hits {
		got = append(got, fmt.Sprintf("%s:%d:%v", filepath.Base(h.Path), h.Count, h.Lines))
	}
	want := []string{"b.txt:1:[1]", "new.txt:1:[1]", "mid.txt:1:[2]", "old.txt:2:[1 2]"}
	if !slices.Equal(got, want) {
		t.Errorf("hits %q, want %q", got, want)
	}
}
