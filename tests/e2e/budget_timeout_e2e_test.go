package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
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
// with reason budget_unreachable: their results say so. Their events of
// that end reach no watcher: only a run's requester publishes its
// events, and it is gone; the node drops them and says so.
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
	// Limits known up front: a key without any has its first call go alone
	// until its answer's headers come (ratelimit), and these calls hold
	// their answers.
	ws := repo(t, "node:\n  budget_timeout: 300ms\nmodel:\n  rate_limit: {default: {rpm: 60000}, cheap: {rpm: 60000}}\n")
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

	var runID string
	for _, ev := range col.events() {
		if ev.Kind == "explore" && ev.Node != "" {
			runID = ev.Run
		}
	}
	if runID == "" {
		t.Fatal("no event of the remote agents reached the watcher before the kill")
	}
	var results []messages.Result
	poll(t, 60*time.Second, func() error {
		results = storedResults(t, url, bus.CredsPath(dir, bus.RoleRequester), runID)
		if len(results) < n {
			return fmt.Errorf("%d of %d remote agents ended", len(results), n)
		}
		return nil
	})
	for _, r := range results {
		if r.Status != "failed" || r.Reason != "budget_unreachable" {
			t.Errorf("%s ended %s, reason %q, want failed, budget_unreachable", r.Agent, r.Status, r.Reason)
		}
	}
	node.waitStderr("did not take the task's events: they are dropped", 10*time.Second)
	for _, ev := range col.events() {
		if ev.Run == runID && ev.Type == messages.EvtAgentFailed {
			t.Errorf("an event of the run was published after its requester was gone: %+v", ev)
		}
	}
	if after := calls.Load() - atKill; after != 0 {
		t.Errorf("%d explore model calls after the orchestrator was killed (the %d in flight then aside)", after, atKill)
	}
	t.Logf("%d explore calls in flight at the kill, %d after", atKill, calls.Load()-atKill)
}

// storedResults reads every result the results stream holds for run.
func storedResults(t *testing.T, url, creds, run string) []messages.Result {
	t.Helper()
	c, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: url, CredsFile: creds}, zerolog.Nop())
	must(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cons, err := c.JetStream().OrderedConsumer(ctx, c.Names().Results, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{bus.ResultsFilter(c.Prefix(), run)}})
	must(t, err)
	info, err := cons.Info(ctx)
	must(t, err)
	var out []messages.Result
	if info.NumPending == 0 {
		return out
	}
	batch, err := cons.Fetch(int(info.NumPending), jetstream.FetchMaxWait(5*time.Second))
	must(t, err)
	for m := range batch.Messages() {
		var r messages.Result
		must(t, json.Unmarshal(m.Data(), &r))
		out = append(out, r)
	}
	return out
}
