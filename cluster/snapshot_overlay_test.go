//go:build linux

package cluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/overlay"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

func tcall(name, args string) llmtest.ToolCall {
	return llmtest.ToolCall{Name: name, Args: json.RawMessage(args)}
}

// A remote worker on a node with agent.worktrees: overlay works in an
// overlay of the requester's snapshot (its command finds an overlay at
// its working directory), its file tool and its command see one tree,
// and its changes land in the requester's workspace.
func TestRemoteWorkerInAnOverlayLands(t *testing.T) {
	if _, err := overlay.Shared(filepath.Join(os.TempDir(), "troupe-cluster-overlay-test")); err != nil {
		peer.Missing(t, "overlay mounts", "%v", err)
	}
	requester, nodeWS := aheadAndBehind(t, "NEEDLE")
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{tcall("delegate", `{"type":"worker","task":"add a file"}`)}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{tcall("write_file", `{"path":"from_node.go","content":"package main // written on the node\n"}`)}},
			{ToolCalls: []llmtest.ToolCall{tcall("shell", `{"command":"findmnt -n -o FSTYPE -T . > fstype.txt && cat from_node.go notes.txt > seen.txt"}`)}},
			{Text: "wrote from_node.go"}}},
	}})
	defer srv.Close()
	res, _ := remoteRun(t, srv, requester, nodeWS, []string{"worker"},
		actors.Options{Settings: actors.Settings{PlanFirst: map[string]bool{"root": false, "worker": false}, Worktrees: "overlay"}})
	if len(res.Changes) != 1 || res.Changes[0].Status != messages.ChangeStatusApplied {
		t.Fatalf("changes %+v", res.Changes)
	}
	for f, want := range map[string]string{
		"from_node.go": "package main // written on the node\n",
		"fstype.txt":   "overlay\n",
		"seen.txt":     "package main // written on the node\nuntracked notes\n",
	} {
		if b, err := os.ReadFile(filepath.Join(requester, f)); err != nil || string(b) != want {
			t.Errorf("%s in the requester's workspace: %q, %v; want %q", f, b, err, want)
		}
	}
}
