package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// No model call without a grant: a run places three explore agents on a
// node (against `orchestrator serve`), each with its first model call
// held by the scripted model; the orchestrator's process is SIGKILLed
// while the three calls are in flight. The node's agents find nobody
// answering for the run's budget (node.budget_timeout, set short in the
// workspace's configuration), make no further model call, and end failed
// with reason budget_unreachable.
func TestNodeAgentsStopWhenTheBudgetDies(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	const n = 3
	gate := make(chan struct{})
	var calls atomic.Int64 // explore calls received
	var delegates []llmtest.ToolCall
	for i := range n {
		args, _ := json.Marshal(map[string]string{"type": "explore", "task": fmt.Sprintf("q%d: where is main?", i)})
		delegates = append(delegates, llmtest.ToolCall{Name: "delegate", Args: args})
	}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{{ToolCalls: delegates}, {Text: "all answered"}}},
		// Left alone, an explore agent greps forever.
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{{Dynamic: func(llmtest.Recorded) llmtest.Turn {
			calls.Add(1)
			<-gate
			return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"func main"}`)}}}
		}}}},
	}})
	defer srv.Close()
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	store := t.TempDir()
	serve := start(t, bin.orchestrator, nil, "serve", "--listen", "127.0.0.1:0", "--store", store)
	url := serve.firstLine(30 * time.Second)
	dir := filepath.Join(store, "creds")
	serve.waitStderr("--creds "+firstNodeCreds(dir), 10*time.Second)
	ws := repo(t, "node:\n  budget_timeout: 300ms\n")
	node := start(t, bin.node, modelEnv(srv), "--nats", url, "--creds", firstNodeCreds(dir), "--workspace", ws, "--slots", "4")
	node.waitStderr(" ready", 30*time.Second)
	col := collect(t, url, bus.CredsPath(dir, bus.RoleWatcher))
	run := start(t, bin.orchestrator, modelEnv(srv), "run", "--nats", url, "--creds", bus.CredsPath(dir, bus.RoleRequester),
		"--workspace", ws, "--json", "--placement", "explore=remote", "find main")
	poll(t, 60*time.Second, func() error {
		if c := calls.Load(); c < n {
			return fmt.Errorf("%d explore calls in flight, want %d", c, n)
		}
		return nil
	})
	must(t, run.cmd.Process.Kill())
	run.wait(30 * time.Second)
	atKill := calls.Load()
	close(gate)

	ended := map[string]messages.Event{}
	poll(t, 60*time.Second, func() error {
		for _, ev := range col.events() {
			if ev.Kind == "explore" && ev.Node != "" && (ev.Type == messages.EvtAgentFailed || ev.Type == messages.EvtAgentFinished ||
				ev.Type == messages.EvtAgentCancelled) {
				ended[ev.Agent] = ev
			}
		}
		if len(ended) < n {
			return fmt.Errorf("%d of %d remote agents ended", len(ended), n)
		}
		return nil
	})
	for agent, ev := range ended {
		var d messages.AgentEnded
		must(t, json.Unmarshal(ev.Data, &d))
		if ev.Type != messages.EvtAgentFailed || d.Reason != "budget_unreachable" {
			t.Errorf("%s ended %s, reason %q, want failed, budget_unreachable", agent, ev.Type, d.Reason)
		}
	}
	if after := calls.Load() - atKill; after != 0 {
		t.Errorf("%d explore model calls after the orchestrator was killed (the %d in flight then aside)", after, atKill)
	}
	t.Logf("%d explore calls in flight at the kill, %d after", atKill, calls.Load()-atKill)
}
