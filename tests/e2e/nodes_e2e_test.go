package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

const tasks = 30

// gatedFanoutN is fanout(n) whose explore agents' first call waits for
// the gate, so the test can kill and drain nodes while they hold tasks.
func gatedFanoutN(n int, gate chan struct{}) *llmtest.Server {
	var calls []llmtest.ToolCall
	for i := 0; i < n; i++ {
		args, _ := json.Marshal(map[string]string{"type": "explore", "task": fmt.Sprintf("q%d: where is main?", i)})
		calls = append(calls, llmtest.ToolCall{Name: "delegate", Args: args})
	}
	return llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{{ToolCalls: calls}, {Text: "all answered"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{
			{Dynamic: func(llmtest.Recorded) llmtest.Turn {
				<-gate
				return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"func main"}`)}}}
			}},
			{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
				return llmtest.Turn{Text: strings.SplitN(req.Task, ":", 2)[0] + ": main.go:3"}
			}},
		}},
	}})
}

// collector follows every event on a server from the start.
type collector struct {
	mu  sync.Mutex
	evs []messages.Event
}

// roleCreds is the creds file of role that a run's embedded server
// announced in errs ("" when it announced none: an external server).
func roleCreds(errs, role string) string {
	m := runCreds.FindStringSubmatch(errs)
	if m == nil {
		return ""
	}
	return m[1] + role + ".creds"
}

// nodeCredsArgs is --creds and the credentials of a node of its own,
// name, issued in the folder a run's embedded server announced in errs
// (orchestrator auth node); nothing for an external server.
func nodeCredsArgs(t *testing.T, errs, name string) []string {
	t.Helper()
	m := runCreds.FindStringSubmatch(errs)
	if m == nil {
		return nil
	}
	issue := start(t, bin.orchestrator, nil, "auth", "node", name, "--dir", m[1])
	if code := issue.wait(30 * time.Second); code != 0 {
		t.Fatalf("auth node %s: exit %d\n%s", name, code, issue.errs())
	}
	return []string{"--creds", strings.TrimSpace(issue.out())}
}

// credsArgs is --creds file, or nothing without a file.
func credsArgs(file string) []string {
	if file == "" {
		return nil
	}
	return []string{"--creds", file}
}

func collect(t *testing.T, url, creds string) *collector {
	t.Helper()
	c, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: url, CredsFile: creds}, zerolog.Nop())
	must(t, err)
	t.Cleanup(c.Close)
	es, err := c.Events(t.Context(), bus.WatchOptions{FromStart: true})
	must(t, err)
	col := &collector{}
	go func() {
		for d := range es.C {
			col.mu.Lock()
			col.evs = append(col.evs, d.Event)
			col.mu.Unlock()
		}
	}()
	return col
}

func (c *collector) events() []messages.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]messages.Event(nil), c.evs...)
}

// poll waits until fn returns nil.
func poll(t *testing.T, d time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %v", d, err)
		}
		<-time.After(10 * time.Millisecond)
	}
}

var (
	nodeReady = regexp.MustCompile(`node (\S+) ready`)
	natsURL   = regexp.MustCompile(`at (nats://\S+) `)
	// runCreds is the folder of the creds files a run's embedded server
	// announced with its watch command.
	runCreds = regexp.MustCompile(`--creds (\S+)watcher\.creds`)
)

// The distributed worker pool, in processes: an orchestrator (its own
// embedded NATS server, or an external nats-server), three nodes, thirty
// explore tasks placed remotely. One node is SIGKILLed and one drained
// with SIGTERM while they hold tasks; every task still ends exactly once,
// the killed node's tasks are redelivered, the drained node hands its
// tasks back and leaves, the budget's ceiling holds across nodes, and a
// watcher process sees every event with no seq gaps.
func TestWorkerPool(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	t.Run("embedded", func(t *testing.T) { workerPool(t, "") })
	t.Run("external", func(t *testing.T) {
		path, err := exec.LookPath("nats-server")
		if err != nil {
			peer.Missing(t, "nats-server", "not installed (tests/run.sh installs the Debian package)")
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		l.Close()
		start(t, path, nil, "-a", "127.0.0.1", "-p", port, "-js", "-sd", t.TempDir())
		url := "nats://127.0.0.1:" + port
		poll(t, 15*time.Second, func() error {
			c, err := net.Dial("tcp", "127.0.0.1:"+port)
			if err == nil {
				c.Close()
			}
			return err
		})
		workerPool(t, url)
	})
}

func workerPool(t *testing.T, external string) {
	gate := make(chan struct{})
	srv := gatedFanoutN(tasks, gate)
	defer srv.Close()
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	// The nodes beat every second; the orchestrator counts one lost after
	// three silent seconds (node.left, reason lost).
	orchCfg := filepath.Join(t.TempDir(), "orchestrator.yaml")
	must(t, os.WriteFile(orchCfg, []byte("node:\n  lease_timeout: 3s\n"), 0o644))
	args := []string{"run", "--workspace", repo(t, ""), "--json", "--config", orchCfg,
		"--placement", "explore=remote", "--ephemeral", "find main"}
	if external != "" {
		args = append(args, "--nats", external)
	}
	run := start(t, bin.orchestrator, modelEnv(srv), args...)
	run.waitStderr("events: ", 30*time.Second)
	url := natsURL.FindStringSubmatch(run.errs())[1]
	col := collect(t, url, roleCreds(run.errs(), "watcher"))

	nodeCfg := filepath.Join(t.TempDir(), "node.yaml")
	must(t, os.WriteFile(nodeCfg, []byte("node:\n  ack_wait: 3s\n  heartbeat: 1s\n  drain_timeout: 1s\n  max_deliver: 5\n"), 0o644))
	nodes := make([]*proc, 3)
	ids := make([]string, 3)
	for i := range nodes {
		nodes[i] = start(t, bin.node, modelEnv(srv), append([]string{"--nats", url, "--workspace", repo(t, ""), "--slots", "4",
			"--name", fmt.Sprintf("box-%d", i), "--config", nodeCfg}, nodeCredsArgs(t, run.errs(), fmt.Sprintf("box-%d", i))...)...)
		nodes[i].waitStderr(" ready", 30*time.Second)
		ids[i] = nodeReady.FindStringSubmatch(nodes[i].errs())[1]
	}
	watcher := start(t, bin.orchestrator, []string{"NO_COLOR=1"}, append([]string{"watch", "--nats", url, "--from-start", "--json"},
		credsArgs(roleCreds(run.errs(), "watcher"))...)...)

	// Every node holds tasks, its agents waiting at the gate.
	poll(t, 60*time.Second, func() error {
		running := map[string]int{}
		for _, ev := range col.events() {
			if ev.Type == messages.EvtAgentStarted && ev.Node != "" {
				running[ev.Node]++
			}
		}
		for _, id := range ids {
			if running[id] == 0 {
				return fmt.Errorf("tasks per node: %v", running)
			}
		}
		return nil
	})
	must(t, nodes[0].cmd.Process.Signal(syscall.SIGKILL))
	must(t, nodes[1].cmd.Process.Signal(syscall.SIGTERM))
	if code := nodes[1].wait(time.Minute); code != 0 {
		t.Fatalf("drained node exited %d:\n%s", code, nodes[1].errs())
	}
	// The run reports the killed node lost while its agents still wait at
	// the gate, so before run.finished, where the watcher stops.
	poll(t, time.Minute, func() error {
		if lost := lostNodes(col.events()); len(lost) == 0 {
			return fmt.Errorf("no node reported lost")
		}
		return nil
	})
	close(gate)
	res := runJSON(t, run)
	if res.Status != "completed" || res.Text != "all answered" {
		t.Fatalf("run: %+v\n%s", res, run.errs())
	}

	// Exactly one result per task reached the root.
	var last llmtest.Recorded
	for _, r := range srv.Requests() {
		if r.Kind == "root" {
			last = r
		}
	}
	answered := map[string]int{}
	for _, m := range last.Messages {
		if m.Role == "tool" {
			if q := regexp.MustCompile(`q(\d+): main\.go:3`).FindStringSubmatch(m.Content); q != nil && strings.Contains(m.Content, "Status: completed") {
				answered[q[1]]++
			}
		}
	}
	if len(answered) != tasks {
		t.Errorf("%d of %d tasks answered: %v", len(answered), tasks, answered)
	}
	for q, n := range answered {
		if n != 1 {
			t.Errorf("task q%s answered %d times", q, n)
		}
	}
	// (The budget's ceiling across nodes: TestWorkerPoolBudgetCeiling.)
	if res.Budget.Used.Tokens == 0 {
		t.Error("the remote agents charged nothing to the run's budget")
	}

	// The watcher process saw it all: nodes joining and leaving, the
	// redeliveries, no gaps.
	if code := watcher.wait(time.Minute); code != 0 {
		t.Fatalf("watch exited %d:\n%s", code, watcher.errs())
	}
	var watched []messages.Event
	for _, line := range strings.Split(strings.TrimSpace(watcher.out()), "\n") {
		var ev messages.Event
		must(t, json.Unmarshal([]byte(line), &ev))
		watched = append(watched, ev)
	}
	checkSeqs(t, watched)
	types := map[string]int{}
	perNode := map[string]int{}
	for _, ev := range watched {
		types[ev.Type]++
		if ev.Type == messages.EvtAgentFinished && ev.Node != "" {
			perNode[ev.Node]++
		}
	}
	if types[messages.EvtNodeJoined] != 3 || types[messages.EvtNodeLeft] != 2 {
		t.Errorf("node events: %d joined, %d left", types[messages.EvtNodeJoined], types[messages.EvtNodeLeft])
	}
	// The drained node said goodbye itself; the killed one was reported
	// lost by the run, once.
	for _, ev := range watched {
		if ev.Type != messages.EvtNodeLeft {
			continue
		}
		left, err := messages.DecodeAs[messages.NodeLeft](ev)
		must(t, err)
		switch {
		case left.Node == ids[1] && left.Reason == "drained" && ev.Run == "nodes" && ev.Agent == ids[1]:
		case left.Node == ids[0] && left.Reason == "lost" && ev.Run == res.Run && ev.Agent == "nodes" && ev.Node == ids[0] && ev.Seq == 1:
		default:
			t.Errorf("node.left %+v: %+v (killed %s, drained %s)", ev, left, ids[0], ids[1])
		}
	}
	checkKilledRedelivered(t, watched, ids[0])
	if types[messages.EvtRunFinished] != 1 || perNode[ids[2]] == 0 {
		t.Errorf("types %v, finished per node %v", types, perNode)
	}
	// The watcher printed what the stream holds, in order.
	all := col.events()
	if len(all) < len(watched) {
		t.Fatalf("the collector has %d events, the watcher printed %d", len(all), len(watched))
	}
	sameEvents(t, watched, all[:len(watched)])

	must(t, nodes[2].cmd.Process.Signal(syscall.SIGTERM))
	if code := nodes[2].wait(time.Minute); code != 0 {
		t.Errorf("last node exited %d:\n%s", code, nodes[2].errs())
	}
	_ = context.Background
}

// lostNodes are the nodes the events report lost.
func lostNodes(evs []messages.Event) []string {
	var out []string
	for _, ev := range evs {
		if ev.Type != messages.EvtNodeLeft {
			continue
		}
		if left, err := messages.DecodeAs[messages.NodeLeft](ev); err == nil && left.Reason == "lost" {
			out = append(out, left.Node)
		}
	}
	return out
}

// checkKilledRedelivered checks that every task whose agent started on
// the killed node (and could not end there) was redelivered to another
// node on a later attempt, and ended there: the redeliveries are the
// killed node's, not only a drained node's hand-backs.
func checkKilledRedelivered(t *testing.T, evs []messages.Event, killed string) {
	t.Helper()
	startedOn := map[string]int{} // agent → its attempt on the killed node
	for _, ev := range evs {
		if ev.Type == messages.EvtAgentStarted && ev.Node == killed {
			startedOn[ev.Agent] = ev.Attempt
		}
	}
	if len(startedOn) == 0 {
		t.Fatalf("no agent started on the killed node %s", killed)
	}
	redelivered := map[string]bool{}
	ended := map[string]bool{}
	for _, ev := range evs {
		switch ev.Type {
		case messages.EvtTaskRedelivered:
			d, err := messages.DecodeAs[messages.TaskRedelivered](ev)
			must(t, err)
			if first, ok := startedOn[d.Agent]; ok && d.Attempt > first && d.Node != killed && ev.Node == d.Node {
				redelivered[d.Agent] = true
			}
		case messages.EvtAgentFinished:
			if first, ok := startedOn[ev.Agent]; ok && ev.Node != killed && ev.Attempt > first {
				ended[ev.Agent] = true
			}
		}
	}
	for agent, attempt := range startedOn {
		if !redelivered[agent] || !ended[agent] {
			t.Errorf("%s started on the killed node (attempt %d): redelivered to another node %v, ended there %v",
				agent, attempt, redelivered[agent], ended[agent])
		}
	}
}
