package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/tools/mcp/mcptest"
)

// A worker placed on a node that calls an MCP tool: the node's own
// config says which servers there are and how they start (the run's
// config names another "fs", which the node never runs: nothing on the
// wire names a command), and the worker's instance of the node's
// reference filesystem server, configured with ${TROUPE_TREE}, serves the
// worker's worktree on the node, neither the node's checkout nor the
// orchestrator's workspace. What it writes there is not in the
// orchestrator's workspace while the worker runs, comes back in the
// worker's changeset and lands; the node's checkout is untouched.
func TestNodeWorkerMCPWritesLandThroughItsChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	fsCmd := mcptest.Filesystem(t, "${TROUPE_TREE}")
	other := mcptest.Build(t)
	yamlList := func(argv []string) string {
		b, err := json.Marshal(argv)
		must(t, err)
		return string(b)
	}
	requester := gitRepo(t, map[string]string{"main.go": "package main\n\nfunc main() {}\n"},
		"agent:\n  plan_first: {root: false, worker: false}\nnode:\n  placement_timeout: 90s\n"+
			"mcp:\n  servers:\n    fs:\n      command: "+yamlList([]string{other})+"\n")
	node := t.TempDir()
	testfiles.Git(t, node, "clone", "-q", requester, ".")
	userConfig(t, node, "agent:\n  plan_first: {worker: false}\nnode:\n  heartbeat: 1s\ntools:\n  definition_budget: -1\n"+
		"mcp:\n  servers:\n    fs:\n      command: "+yamlList(fsCmd)+"\n")
	nodeState := checkoutState(t, node)

	landed := filepath.Join(requester, "from_mcp.txt")
	var mu sync.Mutex
	var early error // the orchestrator's workspace while the worker runs
	var served string
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"write through MCP"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "mcp__fs__write_file",
				Args: json.RawMessage(`{"path":"from_mcp.txt","content":"written through the node's MCP server\n"}`)}}},
			{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
				mu.Lock()
				defer mu.Unlock()
				if last := req.Messages[len(req.Messages)-1].Content; !strings.Contains(last, "Successfully wrote") {
					early = fmt.Errorf("the write said %q", last)
				} else if _, err := os.Stat(landed); !errors.Is(err, os.ErrNotExist) {
					early = fmt.Errorf("the workspace had the file before landing: %v", err)
				}
				return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "mcp__fs__list_allowed_directories", Args: json.RawMessage(`{}`)}}}
			}},
			{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
				mu.Lock()
				served = req.Messages[len(req.Messages)-1].Content
				mu.Unlock()
				return llmtest.Turn{Text: "wrote from_mcp.txt"}
			}}}},
	}})
	defer srv.Close()
	run, n := runWithNode(t, srv, requester, node, "write a file through MCP")
	res := runJSON(t, run)
	if res.Status != "completed" {
		t.Fatalf("run: %+v\n%s\nnode:\n%s", res, run.errs(), n.errs())
	}
	mu.Lock()
	defer mu.Unlock()
	if early != nil {
		t.Errorf("%v\nnode:\n%s", early, n.errs())
	}
	realNode, _ := filepath.EvalSymlinks(node)
	dir := strings.TrimSpace(strings.TrimPrefix(served, "Allowed directories:"))
	if dir == "" || strings.Contains(dir, "\n") || dir == node || dir == realNode || strings.HasPrefix(dir, requester) {
		t.Errorf("the worker's instance serves %q (the node's checkout is %s, the workspace %s)", served, node, requester)
	}
	t.Logf("the worker's instance on the node served %s", dir)
	if b, err := os.ReadFile(landed); err != nil || string(b) != "written through the node's MCP server\n" {
		t.Errorf("the worker's MCP write did not land: %q, %v", b, err)
	}
	if ch := changesOf(t, run); len(ch) != 1 || ch[0].Status != "applied" || len(ch[0].Files) != 1 || ch[0].Files[0] != "from_mcp.txt" {
		t.Errorf("run --json changes: %+v", ch)
	}
	if now := checkoutState(t, node); now != nodeState {
		t.Errorf("the node's checkout changed:\nbefore:\n%s\nafter:\n%s", nodeState, now)
	}
}
