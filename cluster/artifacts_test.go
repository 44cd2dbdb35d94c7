package cluster

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

var artifactRE = regexp.MustCompile(`artifact://\S+\.txt`)

// A remote worker's long output is spilled on its node and kept in the
// run's object store; the parent, in another workspace, reads it by its
// artifact:// handle with read_file and grep.
func TestArtifactsAcrossNodes(t *testing.T) {
	s := natsServer(t)
	handle := make(chan string, 1)
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"count"}`)}}},
			{Dynamic: func(llmtest.Recorded) llmtest.Turn {
				h := <-handle
				return llmtest.Turn{ToolCalls: []llmtest.ToolCall{
					{Name: "read_file", Args: json.RawMessage(`{"path":"` + h + `","offset":15001,"limit":1}`)},
					{Name: "grep", Args: json.RawMessage(`{"path":"` + h + `","pattern":"^1999[0-9]$","mode":"count"}`)}}}
			}},
			{Text: "read it"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "shell", Args: json.RawMessage(`{"command":"seq 1 20000"}`)}}},
			{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
				h := artifactRE.FindString(req.Messages[len(req.Messages)-1].Content)
				handle <- h
				return llmtest.Turn{Text: "the full count is in " + h}
			}}}},
	}})
	defer srv.Close()
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	n, err := StartNode(t.Context(), NodeOptions{Bus: wrap(t, connect(t, s)), ID: "n1", Kinds: []string{"worker"}, Slots: 1,
		Agent: actors.Options{Workspace: workspace(t), Client: modelClient(t, srv), Models: actors.Models{Default: "big"},
			Settings: actors.Settings{PlanFirst: map[string]bool{"worker": false}}, Log: zerolog.Nop()},
		Events: &recorder{}, AckWait: 10 * time.Second, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Drain(t.Context())
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: "ra", Placement: map[string]string{"worker": PlaceRemote}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	res, err := actors.Run(t.Context(), actors.Options{Run: "ra", Workspace: workspace(t), Task: "t", Client: modelClient(t, srv),
		Models: actors.Models{Default: "big"}, Placer: remote.Placer(), OnBudget: remote.ServeBudget, Events: &recorder{},
		Artifacts: bus.NewArtifacts(js, "ra"), Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}}, Log: zerolog.Nop()})
	if err != nil || res.Status != actors.StatusCompleted {
		t.Fatalf("run %+v %v", res, err)
	}
	var last llmtest.Recorded
	for _, r := range srv.Requests() {
		if r.Kind == "root" {
			last = r
		}
	}
	var tools []string
	for _, m := range last.Messages {
		if m.Role == "tool" {
			tools = append(tools, m.Content)
		}
	}
	if len(tools) < 3 || !strings.Contains(tools[1], "L15001: 15000") || !strings.Contains(tools[2], ": 10") {
		t.Errorf("the parent's reads of the artifact: %q", tools)
	}
}
