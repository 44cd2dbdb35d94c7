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

// A remote worker's file over agent.max_change_bytes is not carried, and
// not silently dropped either: its result names it with its size, the
// run's outcome (run --json) says so, and its other edit lands.
func TestRemoteOversizeFileIsReported(t *testing.T) {
	requester, nodeWS := aheadAndBehind(t, "needle")
	big, _ := json.Marshal(map[string]string{"path": "big.txt", "content": strings.Repeat("x", 300)})
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"write"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: big},
				{Name: "write_file", Args: json.RawMessage(`{"path":"small.txt","content":"small\n"}`)}}},
			{Text: "written"}}},
	}})
	defer srv.Close()
	res, _ := remoteRun(t, srv, requester, nodeWS, []string{"worker"},
		actors.Options{Settings: actors.Settings{PlanFirst: map[string]bool{"root": false, "worker": false}, MaxChangeBytes: 200}})
	if len(res.Changes) != 1 {
		t.Fatalf("changes %+v, want one", res.Changes)
	}
	c := res.Changes[0]
	want := messages.OversizeFile{Path: "big.txt", Bytes: 300}
	if c.Status != messages.ChangeStatusApplied || len(c.Oversize) != 1 || c.Oversize[0] != want {
		t.Errorf("outcome %+v, want applied naming big.txt (300 bytes)", c)
	}
	if b, err := os.ReadFile(filepath.Join(requester, "small.txt")); err != nil || string(b) != "small\n" {
		t.Errorf("small.txt did not land: %q %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(requester, "big.txt")); err == nil {
		t.Error("the oversize file reached the workspace")
	}
}
