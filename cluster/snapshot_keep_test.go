package cluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// A remote worker whose changes its node cannot capture (a path git
// refuses) loses nothing: the node keeps its worktree, whole, and the
// run's changes (run --json) name the error and where the node kept it;
// nothing is applied.
func TestRemoteCaptureErrorKeepsTheWorktreeOnTheNode(t *testing.T) {
	requester, nodeWS := aheadAndBehind(t, "needle")
	edit, _ := json.Marshal(map[string]string{"path": "small.txt", "content": "small\n"})
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"write"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: edit},
				{Name: "shell", Args: json.RawMessage(`{"command":"mkdir -p sub/.GIT && echo x > sub/.GIT/x"}`)}}},
			{Text: "written"}}},
	}})
	defer srv.Close()
	res, _ := remoteRun(t, srv, requester, nodeWS, []string{"worker"},
		actors.Options{Settings: actors.Settings{PlanFirst: map[string]bool{"root": false, "worker": false}}})
	if len(res.Changes) != 1 {
		t.Fatalf("changes %+v, want one", res.Changes)
	}
	c := res.Changes[0]
	_, kept, ok := strings.Cut(c.Error, "the worktree is kept on the node at ")
	if c.Status != messages.ChangeStatusError || !strings.Contains(c.Error, "capture") || !ok {
		t.Fatalf("outcome %+v, want an error naming the capture and the kept worktree", c)
	}
	kept, _, _ = strings.Cut(kept, ";")
	if !strings.HasPrefix(kept, nodeWS) {
		t.Errorf("kept at %s, outside the node's workspace %s", kept, nodeWS)
	}
	if b, err := os.ReadFile(filepath.Join(kept, "small.txt")); err != nil || string(b) != "small\n" {
		t.Errorf("the kept worktree lost the edit: %q %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(requester, "small.txt")); err == nil {
		t.Error("changes that were not captured reached the workspace")
	}
}
