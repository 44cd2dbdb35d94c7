// Package testfiles holds the file helpers tests share across packages
// that cannot import each other's tests: golden files (rewritten with
// -update), a snapshot of a directory tree, git run in a checkout, and a
// test binary's tests run again as an unprivileged user (AsNobody).
package testfiles

import (
	"flag"
	"github.com/troupe-ai/troupe/internal/overlay"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// Golden compares got with testdata/<name>.golden, rewriting it with -update.
func Golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden %s (run with -update to create it): %v", path, err)
	}
	if string(want) != got {
		t.Errorf("%s mismatch\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

// Snapshot maps every path under dir to its content ("/" for a folder).
func Snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			m[rel] = "/"
			return nil
		}
		b, err := os.ReadFile(p)
		m[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// PrivateState points XDG_STATE_HOME at a new temporary directory for
// the rest of the test binary and the programs it starts, so troupe's
// state directories (checkpoints, credentials, the embedded NATS store)
// never land in the real home. Call it first in TestMain; call what it
// returns after m.Run.
func PrivateState() (cleanup func()) {
	// A test binary started again by its own test (a child process to
	// kill, say) shares its parent's state, which the parent removes.
	if v := os.Getenv("XDG_STATE_HOME"); strings.HasPrefix(filepath.Base(v), "troupe-state-") {
		return func() {}
	}
	dir, err := os.MkdirTemp("", "troupe-state-")
	if err != nil {
		panic(err)
	}
	_ = os.Setenv("XDG_STATE_HOME", dir)
	return func() { _ = os.RemoveAll(dir) }
}

// RunPrivate runs a package's tests under PrivateState and returns their
// exit code: TestMain's os.Exit(testfiles.RunPrivate(m)). A test binary
// started again as the holder of overlay worktrees holds them instead.
func RunPrivate(m *testing.M) int {
	overlay.MaybeRunHolder()
	cleanup := PrivateState()
	defer cleanup()
	return m.Run()
}
