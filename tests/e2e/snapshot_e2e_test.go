package e2e

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// gitRepo makes a git checkout with files committed and a .troupe/config.yaml
// (ignored, as .troupe/ is).
func gitRepo(t *testing.T, files map[string]string, config string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		peer.Missing(t, "git", "not installed")
	}
	dir := t.TempDir()
	testfiles.Git(t, dir, "init", "-q")
	files[".gitignore"] = ".troupe/\n"
	writeFiles(t, dir, files)
	testfiles.Git(t, dir, "add", "-A")
	testfiles.Git(t, dir, "commit", "-q", "-m", "first")
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

// checkoutState is what a checkout is: its HEAD, its status, its
// uncommitted changes and the bytes of every file not ignored.
func checkoutState(t *testing.T, dir string) string {
	t.Helper()
	state := testfiles.Git(t, dir, "rev-parse", "HEAD") + "\n" + testfiles.Git(t, dir, "status", "--porcelain") + "\n" + testfiles.Git(t, dir, "diff", "HEAD")
	for _, f := range strings.Split(testfiles.Git(t, dir, "ls-files", "-co", "--exclude-standard"), "\n") {
		b, err := os.ReadFile(filepath.Join(dir, f))
		must(t, err)
		state += fmt.Sprintf("\n%s %x", f, sha256.Sum256(b))
	}
	return state
}

// runWithNode starts `orchestrator run --json` in requester with explore
// and worker placed remote, and a node working in nodeWS that joins it.
func runWithNode(t *testing.T, srv *llmtest.Server, requester, nodeWS, task string) (run, node *proc) {
	t.Helper()
	run = start(t, bin.orchestrator, modelEnv(srv), "run", "--workspace", requester, "--json",
		"--placement", "explore=remote,worker=remote", task)
	run.waitStderr("events: ", 30*time.Second)
	url := natsURL.FindStringSubmatch(run.errs())[1]
	node = start(t, bin.node, modelEnv(srv), append([]string{"--nats", url, "--workspace", nodeWS, "--kinds", "explore,worker"},
		credsArgs(roleCreds(run.errs(), "node"))...)...)
	node.waitStderr(" ready", 30*time.Second)
	return run, node
}

// A node whose checkout is one commit behind the orchestrator's (and has
// work of its own in progress), the orchestrator's having an uncommitted
// edit and an untracked file: a remote explore agent finds a string only
// the uncommitted edit holds, a remote worker reads the untracked file
// and its new file lands in the orchestrator's workspace, and the node's
// checkout is byte-identical afterwards (same HEAD, status, changes and
// files).
func TestRemoteAgentsWorkInTheRequestersSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	requester := gitRepo(t, map[string]string{"main.go": "package main\n\nfunc main() {}\n"},
		"agent:\n  plan_first: {root: false, worker: false}\nnode:\n  placement_timeout: 90s\n")
	node := t.TempDir()
	testfiles.Git(t, node, "clone", "-q", requester, ".")
	writeFiles(t, node, map[string]string{".troupe/config.yaml": "agent:\n  plan_first: {worker: false}\nnode:\n  heartbeat: 1s\n"})
	writeFiles(t, requester, map[string]string{"util.go": "package main\n\nfunc util() {}\n"})
	testfiles.Git(t, requester, "add", "-A")
	testfiles.Git(t, requester, "commit", "-q", "-m", "second")
	writeFiles(t, requester, map[string]string{"util.go": "package main\n\n// NEEDLE_ONLY_UNCOMMITTED\nfunc util() {}\n",
		"notes.txt": "untracked notes\n"})
	// The node's checkout has work of its own in progress.
	writeFiles(t, node, map[string]string{"main.go": "package main\n\nfunc main() { /* the node's own edit */ }\n",
		"node-notes.txt": "the node's untracked notes\n"})
	nodeState := checkoutState(t, node)

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
	run, n := runWithNode(t, srv, requester, node, "find the needle, then add a file")
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
	if now := checkoutState(t, node); now != nodeState {
		t.Errorf("the node's checkout changed:\nbefore:\n%s\nafter:\n%s", nodeState, now)
	}
	if list := testfiles.Git(t, node, "worktree", "list"); strings.Count(list, "\n") != 0 {
		t.Errorf("worktrees registered in the node's checkout:\n%s", list)
	}
}

// An orchestrator killed with SIGKILL while two workers hold worktrees
// leaves them behind; the next run in the workspace removes them. They
// were never registered in the user's repository (troupe's own git
// directory holds their records): git worktree list shows only the main
// checkout throughout.
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
	if left, _ := os.ReadDir(filepath.Join(ws, ".troupe", "worktrees")); len(left) < 2 {
		t.Fatalf("the killed run's worktrees are not there to prune: %v", left)
	}
	if list := testfiles.Git(t, ws, "worktree", "list"); strings.Count(list, "\n") != 0 {
		t.Errorf("worktrees registered in the user's repository:\n%s", list)
	}
	next := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{{Text: "nothing to do"}}}}})
	defer next.Close()
	res := runJSON(t, start(t, bin.orchestrator, modelEnv(next), "run", "--workspace", ws, "--json", "anything?"))
	if res.Status != "completed" {
		t.Fatalf("next run: %+v", res)
	}
	if list := testfiles.Git(t, ws, "worktree", "list"); strings.Count(list, "\n") != 0 {
		t.Errorf("after the next run, worktrees:\n%s", list)
	}
	if left, _ := os.ReadDir(filepath.Join(ws, ".troupe", "worktrees")); len(left) != 0 {
		t.Errorf("worktree directories left: %v", left)
	}
}

// The orchestrator's workspace is not a git checkout, nor is the node's:
// a remote explore agent reads the orchestrator's files, a remote
// worker's edit lands in them, and the node's directory is as it was.
func TestRemoteAgentsWorkInAPlainDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	if _, err := exec.LookPath("git"); err != nil {
		peer.Missing(t, "git", "not installed")
	}
	requester, node := t.TempDir(), t.TempDir()
	writeFiles(t, requester, map[string]string{"notes.txt": "one\nNEEDLE_PLAIN\n",
		".troupe/config.yaml": "agent:\n  plan_first: {root: false, worker: false}\nnode:\n  placement_timeout: 90s\n"})
	writeFiles(t, node, map[string]string{"mine.txt": "the node's own file\n",
		".troupe/config.yaml": "agent:\n  plan_first: {worker: false}\nnode:\n  heartbeat: 1s\n"})
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"find the needle"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"edit notes"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"NEEDLE_PLAIN"}`)}}},
			{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
				return llmtest.Turn{Text: "grep said: " + req.Messages[len(req.Messages)-1].Content}
			}}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"notes.txt"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "edit_file", Args: json.RawMessage(`{"path":"notes.txt","old_string":"one","new_string":"ONE"}`)}}},
			{Text: "edited notes.txt"}}},
	}})
	defer srv.Close()
	run, n := runWithNode(t, srv, requester, node, "find the needle, then edit the notes")
	res := runJSON(t, run)
	if res.Status != "completed" {
		t.Fatalf("run: %+v\n%s\nnode:\n%s", res, run.errs(), n.errs())
	}
	var explored string
	for _, r := range srv.Requests() {
		for _, m := range r.Messages {
			if r.Kind == "root" && m.Role == "tool" && strings.Contains(m.Content, "grep said") {
				explored = m.Content
			}
		}
	}
	if !strings.Contains(explored, "notes.txt") {
		t.Errorf("the remote explore agent did not read the orchestrator's files: %q", explored)
	}
	if b, _ := os.ReadFile(filepath.Join(requester, "notes.txt")); string(b) != "ONE\nNEEDLE_PLAIN\n" {
		t.Errorf("the remote worker's edit did not land: %q", b)
	}
	if ch := changesOf(t, run); len(ch) != 1 || ch[0].Status != "applied" || len(ch[0].Files) != 1 || ch[0].Files[0] != "notes.txt" {
		t.Errorf("run --json changes: %+v", ch)
	}
	left, _ := os.ReadDir(node)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != ".troupe mine.txt" {
		t.Errorf("the node's directory holds %v", names)
	}
	if _, err := os.Stat(filepath.Join(requester, ".git")); err == nil {
		t.Error("the orchestrator's directory became a git checkout")
	}
}

// edit is a worker's script: read path, replace old by new in it.
func edit(task, path, old, new string) llmtest.AgentScript {
	args, _ := json.Marshal(map[string]string{"path": path, "old_string": old, "new_string": new})
	return llmtest.AgentScript{Match: llmtest.Matcher{Kind: "worker", TaskContains: task}, Turns: []llmtest.Turn{
		{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"` + path + `"}`)}}},
		{ToolCalls: []llmtest.ToolCall{{Name: "edit_file", Args: args}}},
		{Text: "edited " + path}}}
}

// Five local workers in parallel, each in its own worktree: two change
// different functions of one file and one another file, and all three
// land; two change the same line, and one lands while the other is a
// conflict whose patch file applies cleanly, with git apply, to the
// snapshot the workers started from.
func TestParallelLocalWorkersLandOrConflict(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	const twoFuncs = "package f\n\nfunc One() int {\n\treturn 1\n}\n\nfunc Two() int {\n\treturn 2\n}\n"
	ws := gitRepo(t, map[string]string{"f.go": twoFuncs, "g.go": "package f\n\nvar G = 1\n", "h.go": "package f\n\nvar H = 1\n"},
		"agent:\n  plan_first: {root: false, worker: false}\n  isolation: worktree\n")
	var calls []llmtest.ToolCall
	for _, task := range []string{"task one", "task two", "task g", "task h-left", "task h-right"} {
		calls = append(calls, llmtest.ToolCall{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"` + task + `"}`)})
	}
	// The two workers on h.go both start (in worktrees of the same
	// snapshot) before either goes on: else the second could start after
	// the first's change landed, and find no "H = 1" to change.
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	gated := func(s llmtest.AgentScript) llmtest.AgentScript {
		first := s.Turns[0]
		s.Turns[0] = llmtest.Turn{Dynamic: func(llmtest.Recorded) llmtest.Turn {
			arrived.Done()
			select {
			case <-both:
			case <-time.After(time.Minute):
			}
			return first
		}}
		return s
	}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{{ToolCalls: calls}, {Text: "done"}}},
		edit("task one", "f.go", "return 1", "return 10"),
		edit("task two", "f.go", "return 2", "return 20"),
		edit("task g", "g.go", "G = 1", "G = 100"),
		gated(edit("task h-left", "h.go", "H = 1", "H = 2")),
		gated(edit("task h-right", "h.go", "H = 1", "H = 3")),
	}})
	defer srv.Close()
	run := start(t, bin.orchestrator, modelEnv(srv), "run", "--workspace", ws, "--json", "change five things")
	res := runJSON(t, run)
	if res.Status != "completed" {
		t.Fatalf("run: %+v\n%s", res, run.errs())
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f.go")); string(b) != strings.NewReplacer("return 1", "return 10", "return 2", "return 20").Replace(twoFuncs) {
		t.Errorf("f.go:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "g.go")); string(b) != "package f\n\nvar G = 100\n" {
		t.Errorf("g.go:\n%s", b)
	}
	var out struct {
		Changes []struct {
			Agent, Status, Patch string
			Files                []string
		} `json:"changes"`
	}
	must(t, json.Unmarshal([]byte(run.out()), &out))
	applied, conflicts := 0, 0
	var patch string
	for _, c := range out.Changes {
		switch c.Status {
		case "applied":
			applied++
		case "conflict":
			conflicts++
			patch = c.Patch
		}
	}
	if len(out.Changes) != 5 || applied != 4 || conflicts != 1 {
		t.Fatalf("run --json changes: %+v", out.Changes)
	}
	h, _ := os.ReadFile(filepath.Join(ws, "h.go"))
	lost := map[string]string{"package f\n\nvar H = 2\n": "H = 3", "package f\n\nvar H = 3\n": "H = 2"}[string(h)]
	if lost == "" {
		t.Fatalf("h.go holds neither worker's change:\n%s", h)
	}
	// The snapshot was HEAD (nothing uncommitted): the patch applies to a
	// checkout of it and gives the conflicting worker's file.
	snap := t.TempDir()
	testfiles.Git(t, snap, "clone", "-q", ws, ".")
	testfiles.Git(t, snap, "apply", patch)
	if b, _ := os.ReadFile(filepath.Join(snap, "h.go")); string(b) != "package f\n\nvar "+lost+"\n" {
		t.Errorf("the conflict's patch %s applied to the snapshot gives h.go:\n%s", patch, b)
	}
	if list := testfiles.Git(t, ws, "worktree", "list"); strings.Count(list, "\n") != 0 {
		t.Errorf("worktrees left:\n%s", list)
	}
}
