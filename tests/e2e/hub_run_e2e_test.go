package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// hubTasks is how many remote tasks a hub run fans out.
const hubTasks = 40

// paced is a scripted model whose root fans out hubTasks explore tasks;
// each explore agent's first model call waits for a token the test
// releases, so the test knows how far the run is when it kills a server,
// and counts how often each task was started (its first model call).
// Each explore answer takes latency (none in the tests; a model's time in
// the measurement, hub_cost_e2e_test.go).
type paced struct {
	srv      *llmtest.Server
	pace     chan struct{}
	mu       sync.Mutex
	started  map[string]int // task (q<N>) → its first model calls
	finished atomic.Int64   // tasks whose agent gave its answer
}

func newPaced(latency time.Duration) *paced {
	p := &paced{pace: make(chan struct{}, hubTasks), started: map[string]int{}}
	var calls []llmtest.ToolCall
	for i := 0; i < hubTasks; i++ {
		args, _ := json.Marshal(map[string]string{"type": "explore", "task": fmt.Sprintf("q%d: where is main?", i)})
		calls = append(calls, llmtest.ToolCall{Name: "delegate", Args: args})
	}
	q := func(req llmtest.Recorded) string { return strings.SplitN(req.Task, ":", 2)[0] }
	p.srv = llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{{ToolCalls: calls}, {Text: "all answered"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{
			{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
				p.mu.Lock()
				p.started[q(req)]++
				p.mu.Unlock()
				<-p.pace
				return llmtest.Turn{Latency: llmtest.Duration(latency), ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"func main"}`)}}}
			}},
			{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
				p.finished.Add(1)
				return llmtest.Turn{Latency: llmtest.Duration(latency), Text: q(req) + ": main.go:3"}
			}},
		}},
	}})
	return p
}

// release lets n more tasks go on.
func (p *paced) release(n int) {
	for ; n > 0; n-- {
		p.pace <- struct{}{}
	}
}

// waitFinished waits until n tasks have given their answer.
func (p *paced) waitFinished(t *testing.T, n int64) {
	t.Helper()
	poll(t, 3*time.Minute, func() error {
		if got := p.finished.Load(); got < n {
			return fmt.Errorf("%d of %d tasks answered", got, n)
		}
		return nil
	})
}

// hubRun runs hubTasks remote tasks on two nodes against h, with a
// watcher: faults paces the tasks (and kills what it kills). It checks
// that the run ends with every result exactly once, no task started twice,
// every stored event of the run delivered to the watcher in order with no
// gap, none dropped, and returns how long the run took.
func hubRun(t *testing.T, h *hub, faults func(p *paced)) time.Duration {
	t.Helper()
	return hubRunPaced(t, h, newPaced(0), faults)
}

// hubRunPaced is hubRun with the model p.
func hubRunPaced(t *testing.T, h *hub, p *paced, faults func(p *paced)) time.Duration {
	t.Helper()
	defer p.srv.Close()
	nodes := make([]*proc, 2)
	for i := range nodes {
		creds := firstNodeCreds(h.auth)
		if i > 0 { // one identity per node process
			creds = strings.TrimSpace(orchestratorOK(t, "auth", "node", fmt.Sprintf("node-%d", i+1), "--dir", h.auth))
		}
		nodes[i] = start(t, bin.node, modelEnv(p.srv), "--nats", h.url(), "--creds", creds, "--workspace", repo(t, ""),
			"--slots", "4", "--name", fmt.Sprintf("box-%d", i), "--log-level", "debug")
		nodes[i].waitStderr(" ready", time.Minute)
	}
	began := time.Now()
	run := start(t, bin.orchestrator, modelEnv(p.srv), "run", "--nats", h.url(), "--creds", h.creds(bus.RoleRequester),
		"--workspace", repo(t, ""), "--json", "--placement", "explore=remote", "find main")
	run.waitStderr("events: ", time.Minute)
	watcher := start(t, bin.orchestrator, []string{"NO_COLOR=1"}, "watch", "--nats", h.url(), "--creds", h.creds(bus.RoleWatcher),
		"--from-start", "--json")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("run:\n%s\nnode 0:\n%s\nnode 1:\n%s\nwatch:\n%s", run.errs(), nodes[0].errs(), nodes[1].errs(), watcher.errs())
		}
	})
	faults(p)
	res := runJSON(t, run)
	took := time.Since(began)
	if res.Status != "completed" || res.Text != "all answered" {
		t.Fatalf("run: %+v\n%s", res, run.errs())
	}
	checkAnswered(t, p.srv)
	p.mu.Lock()
	for q, n := range p.started {
		if n != 1 {
			t.Errorf("task %s started %d times", q, n)
		}
	}
	if len(p.started) != hubTasks {
		t.Errorf("%d of %d tasks started", len(p.started), hubTasks)
	}
	p.mu.Unlock()
	if res.EventsDropped != 0 {
		t.Errorf("the run dropped %d events", res.EventsDropped)
	}
	if code := watcher.wait(2 * time.Minute); code != 0 {
		t.Fatalf("watch exited %d:\n%s", code, watcher.errs())
	}
	checkWatched(t, h, res.Run, watcher.out())
	h.checkReplicas(h.conn(bus.RoleRequester), false)
	for _, n := range nodes {
		if strings.Contains(n.errs(), "claim given up") || strings.Contains(n.errs(), "claim revoked") {
			t.Errorf("a node gave up or lost a claim:\n%s", n.errs())
		}
	}
	if strings.Contains(run.errs(), "node lost") {
		t.Errorf("the run counted a node lost:\n%s", run.errs())
	}
	return took
}

// checkAnswered checks that the root got exactly one completed result of
// each task.
func checkAnswered(t *testing.T, srv *llmtest.Server) {
	t.Helper()
	var last llmtest.Recorded
	for _, r := range srv.Requests() {
		if r.Kind == "root" {
			last = r
		}
	}
	answered := map[string]int{}
	for _, m := range last.Messages {
		if m.Role != "tool" {
			continue
		}
		if q := regexp.MustCompile(`q(\d+): main\.go:3`).FindStringSubmatch(m.Content); q != nil && strings.Contains(m.Content, "Status: completed") {
			answered[q[1]]++
		} else {
			t.Errorf("a task's result is not its answer: %s", m.Content)
		}
	}
	if len(answered) != hubTasks {
		t.Errorf("%d of %d tasks answered: %v", len(answered), hubTasks, answered)
	}
	for q, n := range answered {
		if n != 1 {
			t.Errorf("task q%s answered %d times", q, n)
		}
	}
}

// checkWatched checks that the watcher printed every stored event of run,
// in the stream's order, each agent's seqs from 1 with no gap, and that
// every explore agent started once.
func checkWatched(t *testing.T, h *hub, run, out string) {
	t.Helper()
	var watched []messages.Event
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev messages.Event
		must(t, json.Unmarshal([]byte(line), &ev))
		if ev.Run == run {
			watched = append(watched, ev)
		}
	}
	checkSeqs(t, watched)
	stored := h.eventsOf(run)
	var last uint64
	var want []messages.Event
	for _, d := range stored {
		if last != 0 && d.StreamSeq <= last {
			t.Fatalf("stored events out of order: %d after %d", d.StreamSeq, last)
		}
		last = d.StreamSeq
		want = append(want, d.Event)
	}
	if len(watched) != len(want) {
		printed := map[string]bool{}
		for _, ev := range watched {
			printed[ev.ID] = true
		}
		for _, ev := range want {
			if !printed[ev.ID] {
				t.Errorf("stored, not printed by the watcher: %s %s seq %d at %s", ev.Agent, ev.Type, ev.Seq, ev.Time.Format(time.RFC3339Nano))
			}
		}
	}
	sameEvents(t, watched, want)
	starts := map[string]int{}
	for _, ev := range watched {
		if ev.Type == messages.EvtAgentStarted && ev.Kind == "explore" {
			starts[ev.Agent]++
		}
		if ev.Type == messages.EvtTaskRedelivered {
			// At least once: a delivery lost on its way with its server
			// comes again; what must not happen is a second start
			// (counted here and at the model).
			t.Logf("a task was delivered again: %s", ev.Data)
		}
	}
	for agent, n := range starts {
		if n != 1 {
			t.Errorf("agent %s started %d times", agent, n)
		}
	}
	if len(starts) != hubTasks {
		t.Errorf("%d explore agents started, want %d", len(starts), hubTasks)
	}
}

// A hub of three `serve --cluster` processes (one `auth init`), two nodes
// and a watcher: a run of 40 remote tasks loses the server leading the
// task queue a third of the way through (SIGKILL; it is started again
// later), and another server two thirds through. The run ends with every
// result exactly once, no task started twice, every stored event
// delivered to the watcher with no gap, and three replicas of everything.
func TestHubSurvivesLostServers(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	h := startHub(t)
	req := h.conn(bus.RoleRequester)
	h.checkReplicas(req, true)
	took := hubRun(t, h, func(p *paced) {
		third, half, twoThirds := hubTasks/3, hubTasks/2, 2*hubTasks/3
		p.release(third)
		p.waitFinished(t, int64(third))
		first := h.leader(req, req.Names().Tasks)
		h.kill(first)
		p.release(half - third)
		p.waitFinished(t, int64(half))
		h.start(first)
		p.release(twoThirds - half)
		p.waitFinished(t, int64(twoThirds))
		h.checkReplicas(req, true) // the restarted server has caught up
		second := h.leader(req, req.Names().Events)
		if second == first {
			second = (first + 1) % 3
		}
		h.kill(second)
		p.release(hubTasks)
	})
	t.Logf("the run took %v with two servers lost", took.Round(time.Millisecond))
}

// The same run with one server of the three down from before it starts
// to its end.
func TestHubWithAServerDown(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	h := startHub(t)
	h.checkReplicas(h.conn(bus.RoleRequester), true)
	h.kill(2)
	took := hubRun(t, h, func(p *paced) { p.release(hubTasks) })
	t.Logf("the run took %v with a server down", took.Round(time.Millisecond))
}

// The same run with no server lost: the time the runs above are compared
// with (the issue asks that losing two servers cost at most twice it; a
// figure for the README, not a bound the test sets).
func TestHubRunWithoutFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	h := startHub(t)
	h.checkReplicas(h.conn(bus.RoleRequester), true)
	took := hubRun(t, h, func(p *paced) { // paced as TestHubSurvivesLostServers, without the kills
		third, half, twoThirds := hubTasks/3, hubTasks/2, 2*hubTasks/3
		for _, n := range []int{third, half, twoThirds} {
			p.release(n - int(p.finished.Load()))
			p.waitFinished(t, int64(n))
		}
		p.release(hubTasks)
	})
	t.Logf("the run took %v with every server up", took.Round(time.Millisecond))
}
