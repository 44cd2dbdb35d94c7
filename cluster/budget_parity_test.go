package cluster

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// parityScript: the root delegates one explore agent, which greps for as
// long as it may, each call costing 150 tokens, until the run's budget
// stops it; then the root answers.
func parityScript() *llmtest.Server {
	args, _ := json.Marshal(map[string]string{"type": "explore", "task": "where is main?"})
	use := &llmtest.Usage{PromptTokens: 140, CompletionTokens: 10}
	return llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: args}}, Usage: use},
			{Text: "done", Usage: use}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"func main"}`)}}, Usage: use}}},
	}})
}

// spend is what a run spent: the explore agent's model calls and tokens,
// and the run's total.
type spend struct{ calls, explore, total int64 }

// TestRemoteSpendsAsLocal runs the same scenario under the same
// configuration (budget.tokens 2500, agent.estimates root 2000 and
// explore 300) twice: the explore agent local, then on a node whose own
// configuration has other estimates and another top-up. The node's agent
// reserves and tops up by the run's rules, so calls, tokens and the run's
// total are the same, within one top-up.
func TestRemoteSpendsAsLocal(t *testing.T) {
	settings := actors.Settings{PlanFirst: map[string]bool{"root": false, "explore": false}, MaxRounds: 40,
		Estimates: map[string]int64{"root": 2000, "explore": 300}}
	limits := budget.Limits{Tokens: 2500}
	run := func(t *testing.T, remote bool) spend {
		srv := parityScript()
		defer srv.Close()
		opts := actors.Options{Run: "parity", Workspace: workspace(t), Task: "find main", Client: modelClient(t, srv),
			Models: actors.Models{Default: "big", Cheap: "small"}, Settings: settings, Budget: limits, Log: zerolog.Nop()}
		if remote {
			s := natsServer(t)
			nc := connect(t, s)
			// The node's own configuration would top up by 5,000 tokens.
			n, err := StartNode(t.Context(), NodeOptions{Bus: wrap(t, connect(t, s)), ID: "n1", Kinds: []string{"explore"},
				Agent: actors.Options{Workspace: workspace(t), Client: modelClient(t, srv), Models: actors.Models{Default: "big", Cheap: "small"},
					Settings: actors.Settings{TopUp: 5000, Estimates: map[string]int64{"explore": 20_000}}, Log: zerolog.Nop()},
				AckWait: 5 * time.Second, Heartbeat: time.Second, Log: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = n.Drain(t.Context()) }()
			rem, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: opts.Run,
				Placement: map[string]string{"explore": PlaceRemote}, Log: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			defer rem.Close()
			checkFor(t, 10*time.Second, func() error {
				if len(rem.Nodes()) != 1 {
					return fmt.Errorf("%d nodes registered", len(rem.Nodes()))
				}
				return nil
			})
			opts.Placer, opts.OnBudget = rem.Placer(), rem.ServeBudget
		}
		res, err := actors.Run(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != actors.StatusCompleted || res.Budget == nil {
			t.Fatalf("run: %+v", res.AgentResult)
		}
		explore := res.Budget.ByKind["explore"]
		if explore.Agents != 1 {
			t.Fatalf("explore agents: %+v", res.Budget.ByKind)
		}
		return spend{calls: int64(len(requestsOfKind(srv, "explore"))), explore: explore.Used.Tokens, total: res.Budget.Used.Tokens}
	}
	local, remote := run(t, false), run(t, true)
	t.Logf("local: %d explore calls, %d explore tokens, run total %d; remote: %d, %d, %d",
		local.calls, local.explore, local.total, remote.calls, remote.explore, remote.total)
	topUp := settings.TopUpFor("explore") // one top-up's worth of tokens
	perCall := int64(150)
	if local.calls < 3 {
		t.Fatalf("the scenario did not exercise top-ups: %+v", local)
	}
	if d := remote.calls - local.calls; d*perCall > topUp || -d*perCall > topUp {
		t.Errorf("explore calls: %d remote, %d local", remote.calls, local.calls)
	}
	for _, c := range [][2]int64{{remote.explore, local.explore}, {remote.total, local.total}} {
		if d := c[0] - c[1]; d > topUp || -d > topUp {
			t.Errorf("tokens: %d remote, %d local (differ by more than one top-up, %d)", c[0], c[1], topUp)
		}
	}
}
