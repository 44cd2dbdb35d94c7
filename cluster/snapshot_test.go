package cluster

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// needGit fails (CI) or skips a test that needs git.
func needGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is needed: install git")
		}
		t.Skip("git not installed")
	}
}

// aheadAndBehind makes the requester's checkout (two commits, an
// uncommitted edit holding needle, an untracked file) and a node's clone
// one commit behind it.
func aheadAndBehind(t *testing.T, needle string) (requester, node string) {
	t.Helper()
	needGit(t)
	requester = t.TempDir()
	testfiles.Git(t, requester, "init", "-q")
	write := func(dir, name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(requester, ".gitignore", ".troupe/\n")
	write(requester, "main.go", "package main\n\nfunc main() {}\n")
	testfiles.Git(t, requester, "add", "-A")
	testfiles.Git(t, requester, "commit", "-q", "-m", "first")
	node = t.TempDir()
	testfiles.Git(t, node, "clone", "-q", requester, ".")
	write(requester, "util.go", "package main\n\nfunc util() {}\n")
	testfiles.Git(t, requester, "add", "-A")
	testfiles.Git(t, requester, "commit", "-q", "-m", "second")
	write(requester, "util.go", "package main\n\n// "+needle+"\nfunc util() {}\n")
	write(requester, "notes.txt", "untracked notes\n")
	return requester, node
}

// A remote explore agent reads the requester's uncommitted edit, a remote
// worker's change lands in the requester's workspace, the node (one
// commit behind) keeps its checkout as it was, and the run's objects are
// gone once it ends.
func TestRemoteAgentsWorkInTheRequestersSnapshot(t *testing.T) {
	requester, nodeWS := aheadAndBehind(t, "NEEDLE_ONLY_UNCOMMITTED")
	nodeHead := testfiles.Git(t, nodeWS, "rev-parse", "HEAD")
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"find the needle"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"add a file"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"NEEDLE_ONLY_UNCOMMITTED"}`)}}},
			{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
				last := req.Messages[len(req.Messages)-1]
				return llmtest.Turn{Text: "grep said: " + last.Content}
			}}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"notes.txt"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: json.RawMessage(`{"path":"from_node.go","content":"package main // written on the node\n"}`)}}},
			{Text: "wrote from_node.go"}}},
	}})
	defer srv.Close()
	res, remote := remoteRun(t, srv, requester, nodeWS, []string{"explore", "worker"},
		actors.Options{Settings: actors.Settings{PlanFirst: map[string]bool{"root": false, "worker": false}}})
	conn := remote.o.Bus
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
		t.Errorf("the remote explore agent did not find the uncommitted needle: %q", explored)
	}
	if worked == "" {
		t.Error("the remote worker did not read the requester's untracked file")
	}
	if b, err := os.ReadFile(filepath.Join(requester, "from_node.go")); err != nil || string(b) != "package main // written on the node\n" {
		t.Errorf("the remote worker's file did not land: %q, %v", b, err)
	}
	if len(res.Changes) != 1 || res.Changes[0].Status != messages.ChangeStatusApplied {
		t.Errorf("changes %+v", res.Changes)
	}
	if st := testfiles.Git(t, nodeWS, "status", "--porcelain"); st != "" || testfiles.Git(t, nodeWS, "rev-parse", "HEAD") != nodeHead {
		t.Errorf("the node's checkout changed:\n%s", st)
	}
	if _, err := os.Stat(filepath.Join(nodeWS, "from_node.go")); err == nil {
		t.Error("the worker wrote into the node's checkout")
	}
	obs, err := conn.JetStream().ObjectStore(t.Context(), conn.Names().Snapshots)
	if err != nil {
		t.Fatal(err)
	}
	if list, _ := obs.List(t.Context()); len(list) == 0 {
		t.Error("no snapshot was stored")
	}
	remote.Close()
	if list, err := obs.List(t.Context()); !errors.Is(err, jetstream.ErrNoObjectsFound) {
		t.Errorf("objects left after the run: %d, %v", len(list), err)
	}
}

// A remote worker's changeset too large for its result travels through the
// changes bucket and lands all the same; the object goes with the run.
func TestLargeRemoteChangesetTravelsThroughTheStore(t *testing.T) {
	requester, nodeWS := aheadAndBehind(t, "needle")
	big := strings.Repeat("// a long line of a large generated file, to make the patch large\n", 5000)
	args, _ := json.Marshal(map[string]string{"path": "gen/big.go", "content": "package gen\n" + big})
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"generate"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: args}}},
			{Text: "generated"}}},
	}})
	defer srv.Close()
	_, remote := remoteRun(t, srv, requester, nodeWS, []string{"worker"},
		actors.Options{Settings: actors.Settings{PlanFirst: map[string]bool{"root": false, "worker": false}}})
	conn := remote.o.Bus
	if b, err := os.ReadFile(filepath.Join(requester, "gen", "big.go")); err != nil || string(b) != "package gen\n"+big {
		t.Errorf("the large file did not land (%d bytes, %v)", len(b), err)
	}
	obs, err := conn.JetStream().ObjectStore(t.Context(), conn.Names().Changes)
	if err != nil {
		t.Fatal(err)
	}
	list, err := obs.List(t.Context())
	if err != nil || len(list) != 1 || !strings.HasPrefix(list[0].Name, "rr/worker-") || list[0].Size <= maxInlinePatch {
		t.Errorf("the patch did not go through the changes bucket: %v", err)
		for _, o := range list {
			t.Logf("object %s, %d bytes", o.Name, o.Size)
		}
	}
	remote.Close()
	if list, err := obs.List(t.Context()); !errors.Is(err, jetstream.ErrNoObjectsFound) {
		t.Errorf("changesets left after the run: %d, %v", len(list), err)
	}
}
