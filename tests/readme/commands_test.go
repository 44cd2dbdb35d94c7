package readme

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/internal/testport"
)

// shBlocks returns the ```sh blocks of a README section (from heading to
// the next "## ").
func shBlocks(t *testing.T, readme, heading string) []string {
	t.Helper()
	i := strings.Index(readme, heading)
	if i < 0 {
		t.Fatalf("README.md has no %q section", heading)
	}
	sec := readme[i+len(heading):]
	if j := strings.Index(sec, "\n## "); j >= 0 {
		sec = sec[:j]
	}
	var out []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(sec, -1) {
		out = append(out, m[1])
	}
	if len(out) == 0 {
		t.Fatalf("no sh block in %q", heading)
	}
	return out
}

// commandLines splits a block into commands, dropping comments and joining
// continued lines.
func commandLines(block string) []string {
	var out []string
	var cur string
	for _, l := range strings.Split(block, "\n") {
		if i := strings.Index(l, "  #"); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		out = append(out, cur+l)
		cur = ""
	}
	return out
}

// sh runs one command line with bash in dir.
func sh(t *testing.T, dir string, env []string, line string, timeout time.Duration) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return out.String(), errb.String(), code
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// freePort is a loopback port free now (see testport.Free), as a flag value.
func freePort(t *testing.T) string { return strconv.Itoa(testport.Free(t)) }

// The README's commands work as written, in a fresh clone: the two set-up
// commands (the test command on a short subset), the parallel exploration
// example, the worker pool on one machine (with the scripted model in
// place of a real one), watching it, and the tools script.
func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's commands in a fresh clone")
	}
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	if strings.Contains(text, "../shared") || regexp.MustCompile(`\]\((https?:|\.\./)`).MatchString(text) {
		t.Error("README.md links outside the repository")
	}
	clone := filepath.Join(t.TempDir(), "troupe")
	if out, err := exec.Command("git", "clone", "-q", root, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	base := []string{"OPENAI_API_KEY=", "OPENAI_BASE_URL=", "TROUPE_NATS_URL=", "NO_COLOR=1"}

	setup := commandLines(shBlocks(t, text, "## Set up on a fresh machine")[0])
	if len(setup) != 2 {
		t.Fatalf("the set-up block has %d commands, want exactly 2: %q", len(setup), setup)
	}
	out, errs, code := sh(t, clone, base, setup[0], 5*time.Minute)
	if code != 0 || !strings.HasPrefix(out, "Done.") || !strings.HasPrefix(errs, "troupe demo: the MODEL IS SCRIPTED") {
		t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", setup[0], code, out, errs)
	}
	_, errs, code = sh(t, clone, append(base, "TEST_PKGS=./messages", "FUZZTIME=0"), setup[1], 5*time.Minute)
	if code != 0 {
		t.Fatalf("%s (TEST_PKGS=./messages): exit %d\n%s", setup[1], code, errs)
	}

	for _, line := range commandLines(shBlocks(t, text, "## Parallel exploration")[0]) {
		out, errs, code := sh(t, clone, base, line, 3*time.Minute)
		if code != 0 || !regexp.MustCompile(`(?m)^\S+:\d+\texplore-`).MatchString(out) {
			t.Errorf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", line, code, out, errs)
		}
	}

	workerPool(t, clone, text)

	for i, line := range commandLines(shBlocks(t, text, "## Configuration")[0]) {
		out, errs, code := sh(t, clone, base, line, 3*time.Minute)
		want := "model.default: gpt-4.1-mini" // and "# default" beside it
		if i == 1 {
			want = `"value": "gpt-4.1",` + "\n    " + `"origin": "env TROUPE_MODEL"`
		}
		if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "default") {
			t.Errorf("%s: exit %d\nstdout:\n%.2000s\nstderr:\n%s", line, code, out, errs)
		}
	}

	tools := commandLines(shBlocks(t, text, "## Tools")[0])
	out, errs, code = sh(t, clone, base, strings.Join(tools, "\n"), 3*time.Minute)
	if code != 0 || !strings.Contains(out, "=== 1 grep") || !strings.Contains(out, "=== 2 read_file") {
		t.Errorf("tools script: exit %d\n%s\n%s", code, out, errs)
	}
}
