package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// The run's token budget holds across nodes: twelve explore tasks for
// three nodes of four slots, but a budget with room for only about four
// explore leases at once. The remote agents queue for their leases (the
// budget says so in budget.waiting events), and no moment finds more
// agents running on the nodes than their grants fit in the budget.
//
// The check is sound in one direction: a child's lease is granted before
// its task is queued and released after its agent ended on its node, so
// the agents running on the nodes at any moment (from the nodes' own
// agent.started and end events) hold leases at that moment; their
// grants' sum over the ceiling means the ceiling was broken.
func TestWorkerPoolBudgetCeiling(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	const n, limit, estimate = 12, 300_000, 60_000
	gate := make(chan struct{})
	srv := gatedFanoutN(n, gate)
	defer srv.Close()
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	ws := t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(ws, ".troupe"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, ".troupe", "config.yaml"), []byte(fmt.Sprintf(
		"agent:\n  plan_first: {root: false}\n  fanout_threshold: 64\n  estimates: {explore: %d}\nbudget:\n  tokens: %d\n  per_kind: {explore: 64}\n",
		estimate, limit)), 0o644))
	run := start(t, bin.orchestrator, modelEnv(srv), "run", "--workspace", ws, "--json", "--placement", "explore=remote", "--ephemeral", "find main")
	run.waitStderr("events: ", 30*time.Second)
	url := natsURL.FindStringSubmatch(run.errs())[1]
	col := collect(t, url, roleCreds(run.errs(), "watcher"))
	for i := 0; i < 3; i++ {
		node := start(t, bin.node, modelEnv(srv), append([]string{"--nats", url, "--workspace", repo(t, ""), "--slots", "4",
			"--name", fmt.Sprintf("box-%d", i)}, nodeCredsArgs(t, run.errs(), fmt.Sprintf("box-%d", i))...)...)
		node.waitStderr(" ready", 30*time.Second)
	}
	// The nodes have room for all twelve; the budget lets some run and
	// queues the rest.
	poll(t, 60*time.Second, func() error {
		started, waiting := 0, 0
		for _, ev := range col.events() {
			switch {
			case ev.Type == messages.EvtAgentStarted && ev.Node != "":
				started++
			case ev.Type == messages.EvtBudgetWaiting && ev.Kind == "root":
				waiting++
			}
		}
		if started == 0 || waiting == 0 {
			return fmt.Errorf("%d remote agents started, %d budget.waiting events", started, waiting)
		}
		return nil
	})
	close(gate)
	res := runJSON(t, run)
	if res.Status != "completed" || res.Text != "all answered" {
		t.Fatalf("run: %+v\n%s", res, run.errs())
	}
	var evs []messages.Event // what the collector saw: the run's end and every remote agent's
	poll(t, 30*time.Second, func() error {
		evs = nil
		finished, ends := false, 0
		for _, ev := range col.events() {
			if ev.Run != res.Run {
				continue
			}
			evs = append(evs, ev)
			finished = finished || ev.Type == messages.EvtRunFinished
			if ev.Node != "" && (ev.Type == messages.EvtAgentFinished || ev.Type == messages.EvtAgentFailed || ev.Type == messages.EvtAgentCancelled) {
				ends++
			}
		}
		if !finished || ends < n {
			return fmt.Errorf("the collector has run.finished: %v, %d of %d remote agents' ends", finished, ends, n)
		}
		return nil
	})
	remote, grants, waited := map[string]bool{}, map[string]int64{}, map[string]bool{}
	type edge struct {
		at    time.Time
		agent string
		start bool
	}
	var edges []edge
	for _, ev := range evs {
		switch ev.Type {
		case messages.EvtAgentSpawned:
			if d, err := messages.DecodeAs[messages.AgentSpawned](ev); err == nil && d.Placement == "remote" {
				remote[d.Child] = true
			}
		case messages.EvtBudgetAcquired:
			if d, err := messages.DecodeAs[messages.BudgetAcquired](ev); err == nil {
				grants[d.Agent] = d.Tokens
			}
		case messages.EvtBudgetWaiting:
			if d, err := messages.DecodeAs[messages.BudgetWaiting](ev); err == nil {
				waited[d.Agent] = true
			}
		case messages.EvtAgentStarted:
			if ev.Node != "" {
				edges = append(edges, edge{ev.Time, ev.Agent, true})
			}
		case messages.EvtAgentFinished, messages.EvtAgentFailed, messages.EvtAgentCancelled:
			if ev.Node != "" {
				edges = append(edges, edge{ev.Time, ev.Agent, false})
			}
		}
	}
	if len(remote) != n {
		t.Fatalf("%d agents placed remotely, want %d", len(remote), n)
	}
	queued := 0
	for a := range waited {
		if remote[a] {
			queued++
		}
	}
	if queued == 0 {
		t.Error("no remote agent waited for its lease: the budget was not tight")
	}
	sort.SliceStable(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return !edges[i].start // an end and a start at once: the end first
	})
	var held, peak int64
	running, most := 0, 0
	for _, e := range edges {
		g, ok := grants[e.agent]
		if !ok || g <= 0 {
			t.Fatalf("remote agent %s has no budget.acquired event", e.agent)
		}
		if e.start {
			held, running = held+g, running+1
		} else {
			held, running = held-g, running-1
		}
		peak, most = max(peak, held), max(most, running)
	}
	t.Logf("%d of %d remote agents queued for their lease; at most %d ran at once on the nodes, holding %d of %d tokens",
		queued, n, most, peak, res.Budget.Limits.Tokens)
	if res.Budget.Limits.Tokens != limit || peak > limit {
		t.Errorf("the remote agents running at once held %d tokens of grants, over the run's %d", peak, res.Budget.Limits.Tokens)
	}
	if most >= 3*4 {
		t.Errorf("%d agents ran at once: the budget did not limit them below the nodes' slots", most)
	}
}
