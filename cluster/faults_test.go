package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// Malformed tasks, tasks of another protocol version, tasks of a kind on
// another kind's subject and forged results are refused, counted, and
// crash nothing; a good task after them still runs.
func TestNodeRefusesBadTasks(t *testing.T) {
	s := natsServer(t)
	srv := fanoutScript(1, false)
	defer srv.Close()
	n := startNode(t, s, srv, "n1", 2, &recorder{})
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	// The run's budget answers (a node's agent makes no model call otherwise).
	bs, err := StartBudgetServer(wrap(t, nc), "r9", budgetActor(t, "r9", budget.Limits{Tokens: 1_000_000}), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	pub := func(subj string, v any) {
		b, ok := v.([]byte)
		if !ok {
			b, _ = json.Marshal(v)
		}
		if _, err := js.Publish(t.Context(), subj, b); err != nil {
			t.Fatal(err)
		}
	}
	good := messages.Task{V: messages.ProtocolVersion, Run: "r9", ID: "explore-1", Parent: "root", Kind: "explore",
		Task: "q1: where is main?", Model: "small", Tools: []string{"grep"}}
	v2 := good
	v2.V, v2.ID = 99, "explore-v2"
	other := good
	other.Kind, other.ID = "worker", "worker-1"
	pub(TaskSubject(DefaultPrefix, "explore", messages.ProtocolVersion), []byte("{not json"))
	pub(TaskSubject(DefaultPrefix, "explore", messages.ProtocolVersion), other)
	pub(TaskSubject(DefaultPrefix, "explore", messages.ProtocolVersion), v2)
	pub(TaskSubject(DefaultPrefix, "explore", messages.ProtocolVersion), good)
	// The good task runs and its result is published.
	checkFor(t, 30*time.Second, func() error {
		st := n.Stats()
		if st.Malformed != 1 || st.WrongKind != 1 || st.Version != 1 || st.Completed != 1 {
			return errorf("stats %+v", st)
		}
		return nil
	})
	stream, err := js.Stream(t.Context(), bus.ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := stream.GetLastMsgForSubject(t.Context(), bus.ResultSubject(DefaultPrefix, "r9", "explore-1", unsignedTag))
	if err != nil {
		t.Fatal(err)
	}
	res, err := DecodeResult(m.Data)
	if err != nil || res.Status != "completed" || !strings.Contains(res.Text, "main.go:3") || res.Node != "n1" {
		t.Fatalf("result %+v %v", res, err)
	}

	// A forged result for a task this run never sent is dropped and counted.
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: "r10", Placement: map[string]string{"explore": PlaceRemote}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	forged := actors.AgentResult{Agent: "explore-zz", Kind: "explore", Status: "completed", Text: "pwned"}.Wire("r10", "evil", 1)
	pub(bus.ResultSubject(DefaultPrefix, "r10", "explore-zz", resultTag(newSecret(), 1)), forged)
	pub(bus.ResultSubject(DefaultPrefix, "r10", "explore-yy", resultTag(newSecret(), 1)), []byte(`{"v":1,"run":"r10","agent":"explore-yy","status":"weird"}`))
	checkFor(t, 10*time.Second, func() error {
		if st := remote.Stats(); st.Duplicates != 1 || st.Forged != 1 {
			return errorf("remote stats %+v", st)
		}
		return nil
	})
	// The node still works after all that.
	if err := n.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// A worker placed on a node edits files in the node's own workspace, and
// its result (in the parent) lists the changed files.
func TestRemoteWorkerEditsNodeWorkspace(t *testing.T) {
	s := natsServer(t)
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"rename main"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"main.go"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "edit_file", Args: json.RawMessage(`{"path":"main.go","old_string":"func main() {}","new_string":"func main() { run() }"}`)}}},
			{Text: "edited main.go"}}},
	}})
	defer srv.Close()
	nc := connect(t, s)
	nodeWS := workspace(t)
	n, err := StartNode(t.Context(), NodeOptions{Bus: wrap(t, connect(t, s)), ID: "n1", Kinds: []string{"worker"}, Slots: 1,
		Agent: actors.Options{Workspace: nodeWS, Client: modelClient(t, srv), Models: actors.Models{Default: "big"},
			Settings: actors.Settings{PlanFirst: map[string]bool{"worker": false}}, Log: zerolog.Nop()},
		Events: &recorder{}, AckWait: 5 * time.Second, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Drain(t.Context())
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: "rw", Placement: map[string]string{"worker": PlaceRemote}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	rec := &recorder{}
	localWS := workspace(t)
	res, err := actors.Run(t.Context(), actors.Options{Run: "rw", Workspace: localWS, Task: "edit", Client: modelClient(t, srv),
		Models: actors.Models{Default: "big"}, Events: rec, Placer: remote.Placer(), OnBudget: remote.ServeBudget,
		Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}}, Log: zerolog.Nop()})
	if err != nil || res.Status != actors.StatusCompleted {
		t.Fatalf("run %+v %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(nodeWS, "main.go")); !strings.Contains(string(b), "run()") {
		t.Errorf("the node's workspace was not edited: %s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(localWS, "main.go")); strings.Contains(string(b), "run()") {
		t.Error("the orchestrator's workspace was edited")
	}
	var got []string
	for _, r := range srv.Requests() {
		if r.Kind == "root" && r.Round == 2 {
			for _, m := range r.Messages {
				if m.Role == "tool" {
					got = append(got, m.Content)
				}
			}
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "edited main.go") || !strings.Contains(got[0], "Changed: main.go") {
		t.Errorf("the parent's tool result: %q", got)
	}
}

// Cancelling a remote agent (cancel_agent) reaches its node: the agent
// stops mid-call and its parent gets it as cancelled.
func TestRemoteCancel(t *testing.T) {
	s := natsServer(t)
	arrived := make(chan struct{})
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"slow","background":true}`)}}},
			{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
				<-arrived
				id := strings.Fields(strings.SplitN(req.Messages[len(req.Messages)-1].Content, "agent_id=", 2)[1])[0]
				id = strings.TrimRight(id, ".")
				return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "cancel_agent", Args: json.RawMessage(`{"agent_id":"` + id + `"}`)}}}
			}},
			{Text: "cancelled it"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{
			{Dynamic: func(llmtest.Recorded) llmtest.Turn {
				close(arrived)
				return llmtest.Turn{Text: "never", Latency: llmtest.Duration(time.Minute)}
			}}}},
	}})
	defer srv.Close()
	nodeEv := &recorder{}
	n := startNode(t, s, srv, "n1", 1, nodeEv)
	defer n.Drain(t.Context())
	nc := connect(t, s)
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: "rc", Placement: map[string]string{"explore": PlaceRemote}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	res, err := actors.Run(t.Context(), actors.Options{Run: "rc", Workspace: workspace(t), Task: "t", Client: modelClient(t, srv),
		Models: actors.Models{Default: "big"}, Placer: remote.Placer(), OnBudget: remote.ServeBudget, Events: &recorder{},
		Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}}, Log: zerolog.Nop()})
	if err != nil || res.Text != "cancelled it" {
		t.Fatalf("run %+v %v", res, err)
	}
	var cancelled bool
	for _, ev := range nodeEv.events() {
		cancelled = cancelled || (ev.Type == messages.EvtAgentCancelled && ev.Node == "n1")
	}
	if !cancelled {
		t.Error("the remote agent was not cancelled on its node")
	}
	for _, r := range srv.Requests() {
		if r.Kind == "explore" && !r.Canceled {
			t.Error("the remote agent's model call was not cut")
		}
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
