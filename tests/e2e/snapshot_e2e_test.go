package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// gitIn runs git in dir.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitRepo makes a git checkout with files committed and a .troupe/config.yaml
// (ignored, as .troupe/ is).
func gitRepo(t *testing.T, files map[string]string, config string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		peer.Missing(t, "git", "not installed")
	}
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	files[".gitignore"] = ".troupe/\n"
	writeFiles(t, dir, files)
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "first")
	writeFiles(t, dir, map[string]string{".troupe/config.yaml": config})
	return dir
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
}

// changesOf is the changes array run --json printed.
func changesOf(t *testing.T, p *proc) []struct {
	Agent  string   `json:"agent"`
	Status string   `json:"status"`
	Files  []string `json:"files"`
} {
	t.Helper()
	var out struct {
		Changes []struct {
			Agent  string   `json:"agent"`
			Status string   `json:"status"`
			Files  []string `json:"files"`
		} `json:"changes"`
	}
	must(t, json.Unmarshal([]byte(p.out()), &out))
	return out.Changes
}

// A node whose checkout is one commit behind the orchestrator's, which has
// an uncommitted edit and an untracked file: a remote explore agent finds
// a string only the uncommitted edit holds, a remote worker reads the
// untracked file and its new file lands in the orchestrator's workspace,
// and the node's checkout is as it was (clean, same HEAD).
func TestRemoteAgentsWorkInTheRequestersSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	requester := gitRepo(t, map[string]string{"main.go": "package main\n\nfunc main() {}\n"},
		"agent:\n  plan_first: {root: false, worker: false}\nnode:\n  placement_timeout: 90s\n")
	node := t.TempDir()
	gitIn(t, node, "clone", "-q", requester, ".")
	writeFiles(t, node, map[string]string{".troupe/config.yaml": "agent:\n  plan_first: {worker: false}\nnode:\n  heartbeat: 1s\n"})
	writeFiles(t, requester, map[string]string{"util.go": "package main\n\nfunc util() {}\n"})
	gitIn(t, requester, "add", "-A")
	gitIn(t, requester, "commit", "-q", "-m", "second")
	writeFiles(t, requester, map[string]string{"util.go": "package main\n\n// NEEDLE_ONLY_UNCOMMITTED\nfunc util() {}\n",
		"notes.txt": "untracked notes\n"})
	nodeHead := gitIn(t, node, "rev-parse", "HEAD")

	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"find the needle"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"add a file"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"NEEDLE_ONLY_UNCOMMITTED"}`)}}},
			{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
				return llmtest.Turn{Text: "grep said: " + req.Messages[len(req.Messages)-1].Content}
			}}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"notes.txt"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: json.RawMessage(`{"path":"from_node.go","content":"package main // written on the node\n"}`)}}},
			{Text: "wrote from_node.go"}}},
	}})
	defer srv.Close()
	run := start(t, bin.orchestrator, modelEnv(srv), "run", "--workspace", requester, "--json",
		"--placement", "explore=remote,worker=remote", "find the needle, then add a file")
	run.waitStderr("events: ", 30*time.Second)
	url := natsURL.FindStringSubmatch(run.errs())[1]
	n := start(t, bin.node, modelEnv(srv), append([]string{"--nats", url, "--workspace", node, "--kinds", "explore,worker"},
		credsArgs(roleCreds(run.errs(), "node"))...)...)
	n.waitStderr(" ready", 30*time.Second)
	res := runJSON(t, run)
	if res.Status != "completed" {
		t.Fatalf("run: %+v\n%s\nnode:\n%s", res, run.errs(), n.errs())
	}
	var explored, worked string
	for _, r := range srv.Requests() {
		for _, m := range r.Messages {
			if r.Kind == "root" && m.Role == "tool" && strings.Contains(m.Content, "grep said") {
				explored = m.Content
			}
			if r.Kind == "worker" && m.Role == "tool" && strings.Contains(m.Content, "untracked notes") {
				worked = m.Content
			}
		}
	}
	if !strings.Contains(explored, "util.go") {
		t.Errorf("the remote explore agent did not find the string of the uncommitted edit: %q", explored)
	}
	if worked == "" {
		t.Error("the remote worker did not read the orchestrator's untracked file")
	}
	if b, err := os.ReadFile(filepath.Join(requester, "from_node.go")); err != nil || string(b) != "package main // written on the node\n" {
		t.Errorf("the remote worker's file did not land in the orchestrator's workspace: %q, %v", b, err)
	}
	if ch := changesOf(t, run); len(ch) != 1 || ch[0].Status != "applied" || len(ch[0].Files) != 1 || ch[0].Files[0] != "from_node.go" {
		t.Errorf("run --json changes: %+v", ch)
	}
	if st := gitIn(t, node, "status", "--porcelain"); st != "" || gitIn(t, node, "rev-parse", "HEAD") != nodeHead {
		t.Errorf("the node's checkout changed:\n%s", st)
	}
	if list := gitIn(t, node, "worktree", "list"); strings.Count(list, "\n") != 0 {
		t.Errorf("worktrees registered in the node's checkout:\n%s", list)
	}
}

// An orchestrator killed with SIGKILL while two workers hold worktrees
// leaves them behind; the next run in the workspace removes them, so git
// worktree list shows only the main checkout.
func TestKilledRunsWorktreesArePrunedByTheNext(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	ws := gitRepo(t, map[string]string{"a.go": "package a\n", "b.go": "package b\n"},
		"agent:\n  plan_first: {root: false, worker: false}\n  isolation: worktree\n")
	gate := make(chan struct{})
	defer close(gate)
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{
				{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"edit a.go"}`)},
				{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"edit b.go"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Repeat: true, Turns: []llmtest.Turn{
			{Dynamic: func(llmtest.Recorded) llmtest.Turn { <-gate; return llmtest.Turn{Text: "never"} }}}},
	}})
	defer srv.Close()
	run := start(t, bin.orchestrator, modelEnv(srv), "run", "--workspace", ws, "--json", "edit both files")
	// Both workers are in their worktrees once both wait for the model
	// (the run may hold more, made ahead for later workers).
	poll(t, time.Minute, func() error {
		if n := srv.InFlight(); n < 2 {
			return fmt.Errorf("%d model requests waiting", n)
		}
		return nil
	})
	must(t, run.cmd.Process.Signal(syscall.SIGKILL))
	run.wait(time.Minute)
	if list := gitIn(t, ws, "worktree", "list"); strings.Count(list, "\n") < 2 {
		t.Fatalf("the killed run's worktrees are not there to prune:\n%s", list)
	}
	next := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{{Text: "nothing to do"}}}}})
	defer next.Close()
	res := runJSON(t, start(t, bin.orchestrator, modelEnv(next), "run", "--workspace", ws, "--json", "anything?"))
	if res.Status != "completed" {
		t.Fatalf("next run: %+v", res)
	}
	if list := gitIn(t, ws, "worktree", "list"); strings.Count(list, "\n") != 0 {
		t.Errorf("after the next run, worktrees:\n%s", list)
	}
	if left, _ := os.ReadDir(filepath.Join(ws, ".troupe", "worktrees")); len(left) != 0 {
		t.Errorf("worktree directories left: %v", left)
	}
}
