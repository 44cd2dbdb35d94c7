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
	"syscall"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/internal/testport"
	"github.com/troupe-ai/troupe/llm/llmtest"
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

	// The worker pool on one machine, with a free port for 4222 and the
	// scripted model.
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		// The remote worker of "Parallel workers and their changes".
		{Match: llmtest.Matcher{Kind: "root", TaskContains: "Rename Foo to Bar"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "submit_plan", Args: []byte(`{"summary":"rename","steps":[{"title":"rename"}]}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: []byte(`{"type":"worker","task":"rename Foo"}`)}}},
			{Text: "renamed"}}},
		{Match: llmtest.Matcher{Kind: "worker", TaskContains: "rename Foo"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "submit_plan", Args: []byte(`{"summary":"write","steps":[{"title":"write"}]}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: []byte(`{"path":"readme-renamed.txt","content":"Bar\n"}`)}}},
			{Text: "wrote readme-renamed.txt"}}},
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: []byte(`{"type":"explore","task":"find the budget"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "submit_plan", Args: []byte(`{"summary":"answer","steps":[{"title":"answer"}]}`)}}},
			{Text: "budget/actor.go enforces it"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{{Text: "budget/actor.go:1"}}},
	}})
	defer srv.Close()
	port := freePort(t)
	model := append(base, "OPENAI_BASE_URL="+srv.URL(), "OPENAI_API_KEY=sk-test-readme")
	var bg []*exec.Cmd
	defer func() { // the whole process group: go run and the program it runs
		for _, c := range bg {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
		}
		for _, c := range bg {
			done := make(chan struct{})
			go func() { _ = c.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
				<-done
			}
		}
	}()
	pool := commandLines(shBlocks(t, text, "## A worker pool across machines")[0])
	store := t.TempDir() // serve's store, where its creds files are
	for _, line := range pool {
		line = strings.ReplaceAll(line, "4222", port)
		line = strings.ReplaceAll(line, "/tmp/troupe-nats", store)
		if strings.HasSuffix(line, "&") {
			c := exec.Command("bash", "-c", "exec "+strings.TrimSuffix(line, "&"))
			c.Dir, c.Env = clone, append(os.Environ(), model...)
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			errb := &syncBuffer{}
			c.Stderr = errb
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			bg = append(bg, c)
			deadline := time.Now().Add(3 * time.Minute)
			for !strings.Contains(errb.String(), "ready") {
				if time.Now().After(deadline) {
					t.Fatalf("%s never got ready:\n%s", line, errb.String())
				}
				<-time.After(20 * time.Millisecond)
			}
			continue
		}
		// The live watch of the next section, started before the run it
		// shows: piped, it prints one event per line and ends with the run.
		live := strings.ReplaceAll(commandLines(shBlocks(t, text, "## Watching a swarm")[0])[0], "4222", port)
		live = strings.ReplaceAll(live, "/tmp/troupe-nats", store)
		w := exec.Command("bash", "-c", "exec "+live)
		w.Dir, w.Env = clone, append(os.Environ(), base...)
		w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		wout, werr := &syncBuffer{}, &syncBuffer{}
		w.Stdout, w.Stderr = wout, werr
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		watchDone := make(chan error, 1)
		go func() { watchDone <- w.Wait() }()
		deadline := time.Now().Add(3 * time.Minute)
		for !strings.Contains(werr.String(), "watching") {
			if time.Now().After(deadline) {
				t.Fatalf("%s never started:\n%s", live, werr.String())
			}
			<-time.After(20 * time.Millisecond)
		}
		out, errs, code := sh(t, clone, model, line, 3*time.Minute)
		if code != 0 || strings.TrimSpace(out) != "budget/actor.go enforces it" || !strings.Contains(errs, "(remote)") {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", line, code, out, errs)
		}
		select {
		case err := <-watchDone:
			if err != nil || !strings.Contains(wout.String(), `"type":"run.finished"`) || !strings.Contains(wout.String(), `"kind":"explore"`) {
				t.Errorf("%s: %v\nstderr:\n%s\nstdout (%d bytes)", live, err, werr.String(), len(wout.String()))
			}
		case <-time.After(2 * time.Minute):
			_ = syscall.Kill(-w.Process.Pid, syscall.SIGKILL)
			t.Errorf("%s did not end with the run it watched:\n%s", live, werr.String())
		}
	}
	// A remote worker's change arriving, with the hub and node above: the
	// second block of "Parallel workers and their changes".
	remote := commandLines(shBlocks(t, text, "## Parallel workers and their changes")[1])
	if len(remote) != 1 {
		t.Fatalf("want one remote run line, got %q", remote)
	}
	line := strings.ReplaceAll(strings.ReplaceAll(remote[0], "4222", port), "/tmp/troupe-nats", store)
	out, errs, code = sh(t, clone, model, line, 3*time.Minute)
	landed, _ := os.ReadFile(filepath.Join(clone, "readme-renamed.txt"))
	if code != 0 || !regexp.MustCompile(`"status":\s*"applied"`).MatchString(out) || string(landed) != "Bar\n" {
		t.Errorf("%s: exit %d, readme-renamed.txt %q\nstdout:\n%s\nstderr:\n%s", line, code, landed, out, errs)
	}
	_ = os.Remove(filepath.Join(clone, "readme-renamed.txt"))

	// Watching it: the JSON form ends with the run it replayed.
	watchLines := commandLines(shBlocks(t, text, "## Watching a swarm")[0])
	for _, line := range watchLines {
		if !strings.Contains(line, "--json") {
			continue // the live tree needs a terminal and a run to follow
		}
		line = strings.ReplaceAll(line, "4222", port)
		line = strings.ReplaceAll(line, "/tmp/troupe-nats", store)
		out, errs, code := sh(t, clone, base, line, 2*time.Minute)
		if code != 0 || !strings.Contains(out, `"type":"run.finished"`) || !strings.Contains(out, `"type":"node.joined"`) {
			t.Errorf("%s: exit %d\nstderr:\n%s\nstdout (%d bytes)", line, code, errs, len(out))
		}
	}

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
