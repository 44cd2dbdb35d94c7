package readme

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// repoRoot is the checkout this test runs in.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

// goBlockAfter returns the first ```go block after heading in README.md.
func goBlockAfter(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, heading)
	if i < 0 {
		t.Fatalf("README.md has no %q section", heading)
	}
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindStringSubmatch(s[i:])
	if m == nil {
		t.Fatalf("no go block after %q", heading)
	}
	return m[1]
}

// TestLibraryExample writes the README's library example into a module of
// its own (requiring this checkout through a replace directive), builds it
// with the go command as a user would, and runs it against the scripted
// model: the team fans out to explore agents and prints the root's answer.
func TestLibraryExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a separate module")
	}
	src := goBlockAfter(t, "## As a library")
	if !strings.Contains(src, "package main") {
		t.Fatal("the library example is not a whole program")
	}
	dir := t.TempDir()
	root := repoRoot(t)
	goMod := "module example.com/libuser\n\ngo 1.26\n\nrequire github.com/troupe-ai/troupe v0.0.0\n\nreplace github.com/troupe-ai/troupe => " + root + "\n"
	write(t, filepath.Join(dir, "go.mod"), goMod)
	write(t, filepath.Join(dir, "main.go"), src)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "go.sum"), string(sum))
	write(t, filepath.Join(dir, "server.go"), "package main\n\nfunc init() {}\n") // the module holds more than the sample
	bin := filepath.Join(dir, "libuser")
	goCmd(t, dir, "mod", "tidy")
	goCmd(t, dir, "build", "-o", bin, ".")

	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{
				{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"Find where the server listens"}`)},
				{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"Find the HTTP handlers"}`)},
			}},
			{Text: "The server starts in server.go:3"},
		}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{{Text: "server.go:3 func init"}}},
	}})
	defer srv.Close()
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL(), "OPENAI_API_KEY=sk-test-not-a-real-key")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("example failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if strings.TrimSpace(stdout.String()) != "The server starts in server.go:3" {
		t.Errorf("stdout %q", stdout.String())
	}
	if n := strings.Count(stderr.String(), "agent.spawned"); n != 2 {
		t.Errorf("want 2 agent.spawned lines from the event callback, got %d:\n%s", n, stderr.String())
	}
	if !strings.Contains(stderr.String(), "completed: 2 rounds") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	if got := len(srv.Requests()); got != 4 {
		t.Errorf("%d model requests, want 4 (2 root rounds, 2 explore agents)", got)
	}
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func goCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
