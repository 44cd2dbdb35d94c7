package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// keptNote is the log's line on where the work of a killed run went.
var keptNote = regexp.MustCompile(`where the work of the killed run went: the work of \S+ in a killed run \((\d+) files\) is kept in (\S+\.patch)`)

// blockedWorker is a model script whose worker writes a new file and
// edits a.go, then waits for gate (signalling blocked) until its
// process is killed.
func blockedWorker(gate, blocked chan struct{}, remote bool) *llmtest.Server {
	delegate := `{"type":"worker","task":"write and edit"}`
	return llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(delegate)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: json.RawMessage(`{"path":"killed_new.go","content":"package a // written before the kill\n"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"a.go"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "edit_file", Args: json.RawMessage(`{"path":"a.go","old_string":"package a","new_string":"package a // edited before the kill"}`)}}},
			{Dynamic: func(llmtest.Recorded) llmtest.Turn {
				select {
				case blocked <- struct{}{}:
				default:
				}
				<-gate
				return llmtest.Turn{Text: "never"}
			}}}},
	}})
}

// waitBlocked waits for the worker to block in the scripted model.
func waitBlocked(t *testing.T, blocked chan struct{}, procs ...*proc) {
	t.Helper()
	select {
	case <-blocked:
	case <-time.After(2 * time.Minute):
		for _, p := range procs {
			t.Logf("%s stderr:\n%s", p.cmd.Path, p.errs())
		}
		t.Fatal("the worker never reached its blocking turn")
	}
}

// checkKeptPatch finds the note in log, reads the patch it names and
// checks it carries the worker's two files and applies with git apply
// --check to the snapshot (dir: a checkout of it).
func checkKeptPatch(t *testing.T, log, dir string) {
	t.Helper()
	m := keptNote.FindAllStringSubmatch(log, -1)
	if len(m) != 1 {
		t.Fatalf("the log does not say once where the killed run's work went:\n%s", log)
	}
	patch, err := os.ReadFile(m[0][2])
	must(t, err)
	for _, want := range []string{"+++ b/killed_new.go", "+++ b/a.go", "+package a // edited before the kill"} {
		if !strings.Contains(string(patch), want) {
			t.Errorf("the kept patch lacks %q:\n%s", want, patch)
		}
	}
	if out, err := exec.Command("git", "-C", dir, "apply", "--check", m[0][2]).CombinedOutput(); err != nil {
		t.Errorf("the kept patch does not apply to its snapshot: %v\n%s", err, out)
	}
}

// deadWorktrees lists what the killed process pid left in dir, its
// worktrees directory.
func deadWorktrees(dir string, pid int) []string {
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), strconv.Itoa(pid)+"-") {
			left = append(left, e.Name())
		}
	}
	return left
}

// noDeadWorktrees checks that the killed process pid left no worktree
// in dir and no mount there (an overlay's).
func noDeadWorktrees(t *testing.T, dir string, pid int) {
	t.Helper()
	if left := deadWorktrees(dir, pid); len(left) > 0 {
		t.Errorf("the killed process's worktrees are still in %s: %v", dir, left)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	must(t, err)
	if strings.Contains(string(mounts), dir) {
		t.Errorf("a mount is left in %s", dir)
	}
}

// An orchestrator killed with SIGKILL while its worker, having written
// a file and edited another, waits for the model: the next run keeps
// the worker's work as a patch (its log says where), the patch applies
// to the snapshot, and the dead worktree is gone; for checkout and
// overlay worktrees.
func TestKilledRunsWorkIsKeptByTheNext(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	for _, kind := range []string{"checkout", "overlay"} {
		t.Run(kind, func(t *testing.T) {
			ws := gitRepo(t, map[string]string{"a.go": "package a\n"},
				"agent:\n  plan_first: {root: false, worker: false}\n  isolation: worktree\n  worktrees: "+kind+"\n")
			gate, blocked := make(chan struct{}), make(chan struct{}, 1)
			defer close(gate)
			srv := blockedWorker(gate, blocked, false)
			defer srv.Close()
			run := start(t, bin.orchestrator, modelEnv(srv), "run", "--workspace", ws, "--json", "write and edit")
			waitBlocked(t, blocked, run)
			must(t, run.cmd.Process.Signal(syscall.SIGKILL))
			run.wait(time.Minute)
			wts := filepath.Join(ws, ".troupe", "worktrees")
			if len(deadWorktrees(wts, run.cmd.Process.Pid)) == 0 {
				t.Fatalf("the killed run left no worktree to keep:\n%s", run.errs())
			}
			if kind == "overlay" && strings.Contains(run.errs(), "overlay worktrees unavailable") {
				if os.Getenv("CI") == "true" {
					t.Fatal(run.errs())
				}
				t.Skip("no overlay worktrees here")
			}
			next := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
				{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{{Text: "nothing to do"}}}}})
			defer next.Close()
			p := start(t, bin.orchestrator, modelEnv(next), "run", "--workspace", ws, "--json", "--log-level", "warn", "anything?")
			if res := runJSON(t, p); res.Status != "completed" {
				t.Fatalf("next run: %+v", res)
			}
			checkKeptPatch(t, p.errs(), ws)
			if ch := changesOf(t, p); len(ch) != 1 || ch[0].Status != "error" || strings.Join(ch[0].Files, ",") != "a.go,killed_new.go" {
				t.Errorf("run --json changes: %+v", ch)
			}
			noDeadWorktrees(t, wts, run.cmd.Process.Pid)
			if got := testfiles.Git(t, ws, "status", "--porcelain"); got != "" {
				t.Errorf("the kept work went into the workspace:\n%s", got)
			}
		})
	}
}

// A node killed with SIGKILL while its worker waits for the model: the
// node's next start keeps the worker's work as a patch that applies to
// the snapshot it was sent.
func TestKilledNodesWorkIsKeptByItsNextStart(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	requester := gitRepo(t, map[string]string{"a.go": "package a\n"},
		"agent:\n  plan_first: {root: false, worker: false}\nnode:\n  placement_timeout: 90s\n")
	node := t.TempDir()
	userConfig(t, node, "agent:\n  plan_first: {worker: false}\nnode:\n  heartbeat: 1s\n")
	gate, blocked := make(chan struct{}), make(chan struct{}, 1)
	defer close(gate)
	srv := blockedWorker(gate, blocked, true)
	defer srv.Close()
	run, n := runWithNode(t, srv, requester, node, "write and edit")
	defer run.cmd.Process.Kill()
	waitBlocked(t, blocked, run, n)
	must(t, n.cmd.Process.Signal(syscall.SIGKILL))
	n.wait(time.Minute)
	wts := filepath.Join(node, ".troupe", "snapshots", "worktrees")
	if len(deadWorktrees(wts, n.cmd.Process.Pid)) == 0 {
		t.Fatalf("the killed node left no worktree to keep:\n%s", n.errs())
	}
	url := natsURL.FindStringSubmatch(run.errs())[1]
	again := start(t, bin.node, modelEnv(srv), append([]string{"--nats", url, "--workspace", node, "--kinds", "worker"},
		nodeCredsArgs(t, run.errs(), "snap-node")...)...)
	defer again.cmd.Process.Kill()
	again.waitStderr(" ready", time.Minute)
	checkKeptPatch(t, again.errs(), requester)
	noDeadWorktrees(t, wts, n.cmd.Process.Pid)
}
