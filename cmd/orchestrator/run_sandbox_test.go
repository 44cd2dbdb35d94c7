//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// A scripted run's shell commands are confined: a write outside the
// workspace fails and creates nothing, a read of a planted
// ~/.ssh/id_ed25519 (HOME a temporary directory) fails, writes in the
// workspace and its subfolders succeed, and each refused command's
// result carries the one line naming the sandbox rule.
func TestRunShellSandboxed(t *testing.T) {
	needLandlock(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	key := filepath.Join(home, ".ssh", "id_ed25519")
	if err := os.MkdirAll(filepath.Dir(key), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("PRIVATE-KEY-MATERIAL\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".troupe"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".troupe", "config.yaml"), []byte("agent:\n  plan_first: {root: false}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := "/tmp/troupe-run-sandbox-" + strconv.Itoa(os.Getpid())
	shell := func(command string) llmtest.Turn {
		args, _ := json.Marshal(map[string]string{"command": command})
		return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "shell", Args: args}}}
	}
	srv := scripted(t,
		shell("echo x > "+outside),
		shell("cat "+key),
		shell("mkdir -p sub/deeper && echo inside > sub/deeper/in.txt && echo tmp > \"$TMPDIR/t\" && cat sub/deeper/in.txt \"$TMPDIR/t\""),
		llmtest.Turn{Text: "done"})
	code, out, errs := runCmd(t, t.Context(), testEnv(srv, home), false, "--workspace", ws, "--yes", "try the sandbox")
	if code != exitOK || out != "done\n" {
		t.Fatalf("exit %d %q\n%s", code, out, errs)
	}
	reqs := srv.Requests()
	var results []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	if len(results) != 3 {
		t.Fatalf("%d tool results, want 3: %q", len(results), results)
	}
	rule := "[sandbox: writes are allowed only beneath " + ws
	if r := results[0]; !strings.Contains(r, "Permission denied") || strings.Count(r, rule) != 1 {
		t.Errorf("write outside: %q", r)
	}
	notCreated(t, outside)
	if r := results[1]; !strings.Contains(r, "Permission denied") || strings.Contains(r, "PRIVATE-KEY") ||
		!strings.Contains(r, "reads of "+filepath.Join(home, ".ssh")) {
		t.Errorf("read of the key: %q", r)
	}
	if r := results[2]; !strings.HasPrefix(r, "[exit: 0]\ninside\ntmp\n") || strings.Contains(r, "[sandbox:") {
		t.Errorf("writes inside: %q", r)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "sub", "deeper", "in.txt")); err != nil || string(b) != "inside\n" {
		t.Errorf("in.txt: %q, %v", b, err)
	}
	if strings.Contains(errs, "not enforced") {
		t.Errorf("a warning on a kernel that enforces everything:\n%s", errs)
	}
}
