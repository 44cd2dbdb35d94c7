package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// fallbackNote starts the log's line on worktrees that fell back to
// checkouts (workspace's overlay_kind.go).
const fallbackNote = "worktrees are checkouts (agent.worktrees auto)"

// With agent.worktrees auto (the default) where this user may make no
// user namespace, the overlay probe fails: the run uses checkout
// worktrees, its worker's edit lands, and the log says so once. The
// orchestrator runs in a user namespace of the test's own whose limit
// of user namespaces a shell sets to 0 first (user.max_user_namespaces
// is per namespace: the machine's is untouched).
func TestAutoWorktreesFallBackToCheckoutsAndSaySo(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	ws := gitRepo(t, map[string]string{"a.go": "package a\n"},
		"agent:\n  plan_first: {root: false, worker: false}\n  isolation: worktree\n")
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"edit a.go"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"a.go"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "edit_file", Args: json.RawMessage(`{"path":"a.go","old_string":"package a","new_string":"package a // in a checkout"}`)}}},
			{Text: "edited"}}},
	}})
	defer srv.Close()
	args := []string{"run", "--workspace", ws, "--json", "--log-level", "info", "edit a.go"}
	cmd := exec.Command("/bin/sh", append([]string{"-c", `echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" "$@"`, bin.orchestrator}, args...)...)
	cmd.Env = append(append(os.Environ(), homeFor(args)...), modelEnv(srv)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	probe := exec.Command("/bin/true")
	probe.SysProcAttr = cmd.SysProcAttr
	if err := probe.Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no user namespace for the test: %v", err)
		}
		t.Skipf("no user namespace for the test: %v", err)
	}
	p := startCmd(t, cmd)
	res := runJSON(t, p)
	if res.Status != "completed" {
		t.Fatalf("run: %+v\n%s", res, p.errs())
	}
	if n := strings.Count(p.errs(), fallbackNote); n != 1 {
		t.Errorf("the log says %d times that worktrees fell back to checkouts:\n%s", n, p.errs())
	}
	if !strings.Contains(p.errs(), "user namespace") {
		t.Errorf("the note does not say why:\n%s", p.errs())
	}
	if ch := changesOf(t, p); len(ch) != 1 || ch[0].Status != "applied" || strings.Join(ch[0].Files, ",") != "a.go" {
		t.Errorf("run --json changes: %+v", ch)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "a.go")); err != nil || string(b) != "package a // in a checkout\n" {
		t.Errorf("the worker's edit did not land: %q, %v", b, err)
	}
}
