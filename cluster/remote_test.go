package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

func modelClient(t testing.TB, srv *llmtest.Server) llm.Client {
	t.Helper()
	c, err := llm.NewClient(llm.Config{BaseURL: srv.URL(), Model: "big", Stream: true, MaxAttempts: 2,
		InitialBackoff: time.Millisecond}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fanoutScript(n int, workerEdits bool) *llmtest.Server {
	var calls []llmtest.ToolCall
	for i := 0; i < n; i++ {
		args, _ := json.Marshal(map[string]string{"type": "explore", "task": fmt.Sprintf("question %d: where is main?", i)})
		calls = append(calls, llmtest.ToolCall{Name: "delegate", Args: args})
	}
	root := []llmtest.Turn{{ToolCalls: calls}, {Text: "all answered"}}
	return llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: root},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"func main"}`)}}},
			{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
				return llmtest.Turn{Text: "answer to " + strings.SplitN(req.Task, ":", 2)[0] + ": main.go:3"}
			}},
		}},
	}})
}

func workspace(t testing.TB) string {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

type recorder struct {
	mu  sync.Mutex
	evs []messages.Event
}

func (r *recorder) Emit(ev messages.Event) { r.mu.Lock(); r.evs = append(r.evs, ev); r.mu.Unlock() }
func (r *recorder) events() []messages.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]messages.Event(nil), r.evs...)
}

func startNode(t *testing.T, s *server.Server, srv *llmtest.Server, name string, slots int, ev actors.Emitter) *Node {
	t.Helper()
	nc := connect(t, s)
	n, err := StartNode(t.Context(), NodeOptions{Bus: wrap(t, nc), ID: name, Name: name, Kinds: []string{"explore"}, Slots: slots,
		Agent: actors.Options{Workspace: workspace(t), Client: modelClient(t, srv),
			Models: actors.Models{Default: "big", Cheap: "small"}, Log: zerolog.Nop()},
		Events: ev, AckWait: 5 * time.Second, Heartbeat: time.Second, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A run places its explore agents on two nodes: each task runs on a node
// (with the node's name in its events), its result reaches its parent
// exactly once, the remote agents charge the run's budget, and every lease
// comes back.
func TestRemotePlacementEndToEnd(t *testing.T) {
	s := natsServer(t)
	srv := fanoutScript(10, false)
	defer srv.Close()
	nodeEv := &recorder{}
	n1 := startNode(t, s, srv, "n1", 3, nodeEv)
	n2 := startNode(t, s, srv, "n2", 3, nodeEv)

	nc := connect(t, s)
	run := "run-remote"
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: run,
		Placement: map[string]string{"explore": PlaceRemote}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	checkFor(t, 10*time.Second, func() error {
		if len(remote.Nodes()) != 2 {
			return fmt.Errorf("%d nodes registered", len(remote.Nodes()))
		}
		return nil
	})
	rec := &recorder{}
	res, err := actors.Run(t.Context(), actors.Options{Run: run, Workspace: workspace(t), Task: "find main",
		Client: modelClient(t, srv), Models: actors.Models{Default: "big", Cheap: "small"}, Events: rec,
		Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}, FanoutThreshold: 20},
		Placer:   remote.Placer(), OnBudget: remote.ServeBudget, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actors.StatusCompleted || res.Text != "all answered" {
		t.Fatalf("run: %+v", res.AgentResult)
	}
	// Each of the 10 questions was answered once, by a node, and the root's
	// last request holds all ten answers.
	last := requestsOfKind(srv, "root")
	answers := 0
	for _, m := range last[len(last)-1].Messages {
		if m.Role == "tool" && strings.Contains(m.Content, ": main.go:3") && strings.Contains(m.Content, "Status: completed") {
			answers++
		}
	}
	if answers != 10 {
		t.Errorf("%d answers reached the root, want 10", answers)
	}
	st1, st2 := n1.Stats(), n2.Stats()
	if st1.Completed+st2.Completed != 10 || st1.Completed == 0 || st2.Completed == 0 {
		t.Errorf("tasks per node: %d and %d (want 10 shared by both)", st1.Completed, st2.Completed)
	}
	if remote.Stats() != (RemoteStats{}) {
		t.Errorf("dropped results: %+v", remote.Stats())
	}
	if w, s := remote.pending(); w != 0 || s != 0 {
		t.Errorf("after the run the remote still remembers %d waiting tasks and %d sequences", w, s)
	}
	ends := 0
	for _, ev := range nodeEv.events() {
		if ev.Type == messages.EvtAgentFinished {
			ends++
			if ev.Run != run || ev.Parent != actors.RootAgentID || (ev.Node != "n1" && ev.Node != "n2") || ev.Attempt != 1 {
				t.Errorf("remote agent event envelope: %+v", ev)
			}
		}
	}
	if ends != 10 {
		t.Errorf("%d agent.finished events from the nodes, want 10", ends)
	}
	if res.Budget == nil || res.Budget.Slots != 0 || res.Budget.ByKind["explore"].Agents != 10 || res.Budget.ByKind["explore"].Used.Tokens == 0 {
		t.Errorf("budget: %+v", res.Budget)
	}
	for _, n := range []*Node{n1, n2} {
		if err := n.Drain(t.Context()); err != nil {
			t.Error(err)
		}
	}
	joined, left := 0, 0
	for _, ev := range nodeEv.events() {
		switch ev.Type {
		case messages.EvtNodeJoined:
			joined++
		case messages.EvtNodeLeft:
			left++
		}
	}
	if joined != 2 || left != 2 {
		t.Errorf("node events: %d joined, %d left", joined, left)
	}
}

func requestsOfKind(srv *llmtest.Server, kind string) []llmtest.Recorded {
	var out []llmtest.Recorded
	for _, r := range srv.Requests() {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}
