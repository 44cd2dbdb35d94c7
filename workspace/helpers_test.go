package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/overlay"
)

// needGit fails (CI) or skips the test when git is missing.
func needGit(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal("git is needed: install git")
		}
		tb.Skip("git not installed")
	}
}

// sh runs git in dir for a test, as a user would (git finds the
// repository; no config but the test's), failing it on error.
func sh(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", append([]string{"-c", "core.quotePath=false"}, args...)...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_OPTIONAL_LOCKS=0", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_AUTHOR_DATE=@0 +0000", "GIT_COMMITTER_DATE=@0 +0000")
	enterView(tb, cmd)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// enterView makes cmd, to run in an overlay worktree's merged view as
// this process reaches it (/proc/<holder>/root/<P>), run as the agent's
// commands are: inside the holder's namespaces at P (Holder.Wrap), view
// paths in its arguments made the namespace's. From outside, the view
// is a path git cannot work in: the worktree's git directory names P,
// an empty directory in this namespace.
func enterView(tb testing.TB, cmd *exec.Cmd) {
	tb.Helper()
	if !strings.HasPrefix(cmd.Dir, "/proc/") {
		return
	}
	h, err := overlay.Shared(os.TempDir())
	if err != nil {
		return // no overlays here: no views either
	}
	view := strings.TrimSuffix(h.View("/"), "/")
	in, ok := strings.CutPrefix(cmd.Dir, view)
	if !ok || !strings.HasPrefix(in, "/") {
		return
	}
	// Inside, paths are the namespace's own: a view path in an argument
	// (git init <view>/inner) is one there.
	for i, a := range cmd.Args {
		cmd.Args[i] = strings.ReplaceAll(a, view+"/", "/")
	}
	if err := h.Wrap(cmd, in); err != nil {
		tb.Fatal(err)
	}
}

// write writes files (path → contents) under root.
func write(tb testing.TB, root string, files map[string]string) {
	tb.Helper()
	for p, c := range files {
		abs := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(c), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// read returns the contents of root/p ("<absent>" when it does not exist).
func read(tb testing.TB, root, p string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
	if os.IsNotExist(err) {
		return "<absent>"
	}
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// newRepo makes a git repository with files committed.
func newRepo(tb testing.TB, files map[string]string) string {
	tb.Helper()
	needGit(tb)
	dir := tb.TempDir()
	sh(tb, dir, "init", "-q", "-b", "main")
	write(tb, dir, files)
	sh(tb, dir, "add", "-A")
	sh(tb, dir, "commit", "-q", "-m", "first")
	return dir
}

// open opens root as a Repo for a test.
func open(tb testing.TB, root string) *Repo {
	tb.Helper()
	r, err := Open(context.Background(), root, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// funcs is a Go file of two functions, each a few lines apart, for
// merges of different regions.
const funcs = `package p

func A() int {
	return 1
}

// padding so the two functions are separate hunks
// 1
// 2
// 3
// 4

func B() int {
	return 2
}
`

func strconvItoa(i int) string { return strconv.Itoa(i) }

// openSnap opens root as a Repo for a test, closed when the test ends,
// and takes a snapshot of it.
func openSnap(t *testing.T, root string) (*Repo, Snapshot) {
	t.Helper()
	r := open(t, root)
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	return r, snap
}

// gitDirOf reads the git directory a worktree's .git file names (tests
// only: troupe never reads it).
func gitDirOf(dir string) (string, error) {
	link, err := os.ReadFile(filepath.Join(dir, ".git"))
	if err != nil {
		return "", err
	}
	gitDir, ok := strings.CutPrefix(strings.TrimSpace(string(link)), "gitdir: ")
	if !ok || !filepath.IsAbs(gitDir) {
		return "", fmt.Errorf("unexpected .git file %q", link)
	}
	return gitDir, nil
}

// copyFile copies the file src to dst.
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}

// childReport runs the test named child in a child process of this test
// binary, env added to its environment, failing t when it fails, and
// decodes into rep the report.json it wrote in dir (a measurement of
// the child's own, such as its peak RSS, which this process's would
// blur).
func childReport(t *testing.T, child, dir string, rep any, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child %s: %v\n%s", child, err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	must(t, err)
	must(t, json.Unmarshal(data, rep))
}
