package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// blockingScript: the root delegates n explore agents (in the background
// when n > 1, so they run at once) and answers when they have ended; each
// explore's model call is answered by answer (by agent and attempt).
func blockingScript(n int, answer func(agent string, attempt int) llmtest.Turn) *llmtest.Server {
	var calls []llmtest.ToolCall
	for i := 0; i < n; i++ {
		args, _ := json.Marshal(map[string]string{"type": "explore", "task": fmt.Sprintf("q%d: where is main?", i)})
		calls = append(calls, llmtest.ToolCall{Name: "delegate", Args: args})
	}
	var mu sync.Mutex
	attempts := map[string]int{}
	return llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{{ToolCalls: calls}, {Text: "all answered"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			mu.Lock()
			attempts[req.Agent]++
			a := attempts[req.Agent]
			mu.Unlock()
			return answer(req.Agent, a)
		}}}},
	}})
}

// nodeOpts are a test node's options; change them before startNodeWith.
func nodeOpts(t *testing.T, s *server.Server, srv *llmtest.Server, id string) NodeOptions {
	t.Helper()
	nc := connect(t, s)
	return NodeOptions{Bus: wrap(t, nc), ID: id, Name: id, Kinds: []string{"explore"}, Slots: 2,
		Agent: actors.Options{Workspace: workspace(t), Client: modelClient(t, srv),
			Models: actors.Models{Default: "big", Cheap: "small"}, Log: zerolog.Nop()},
		Events: &recorder{}, AckWait: 5 * time.Second, Heartbeat: time.Second, DrainTimeout: 5 * time.Second, Log: zerolog.Nop()}
}

func startNodeWith(t *testing.T, o NodeOptions) *Node {
	t.Helper()
	n, err := StartNode(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if n.ctx.Err() == nil {
			_ = n.Drain(t.Context())
		}
	})
	return n
}

// teamRun starts a run whose explore agents are placed on the nodes.
type teamRun struct {
	remote *Remote
	team   *actors.Team
	events *recorder
}

func startTeam(t *testing.T, s *server.Server, srv *llmtest.Server, run string, mutate func(*actors.Options)) *teamRun {
	t.Helper()
	nc := connect(t, s)
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: run,
		Placement: map[string]string{"explore": PlaceRemote}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remote.Close)
	rec := &recorder{}
	o := actors.Options{Run: run, Workspace: workspace(t), Task: "find main", Client: modelClient(t, srv),
		Models: actors.Models{Default: "big", Cheap: "small"}, Events: rec, Placer: remote.Placer(), OnBudget: remote.ServeBudget,
		Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}, FanoutThreshold: 50}, Log: zerolog.Nop()}
	if mutate != nil {
		mutate(&o)
	}
	team, err := actors.Start(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	return &teamRun{remote: remote, team: team, events: rec}
}

// wait waits for the run's end, for a minute at most (then the run is
// cancelled, and the test fails on its result).
func (r *teamRun) wait(t *testing.T) (actors.Result, error) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	return r.team.Wait(ctx)
}

// rootToolResults are the tool results in the root's last model request.
func rootToolResults(srv *llmtest.Server) []string {
	var out []string
	root := requestsOfKind(srv, "root")
	if len(root) == 0 {
		return nil
	}
	for _, m := range root[len(root)-1].Messages {
		if m.Role == "tool" {
			out = append(out, m.Content)
		}
	}
	return out
}

// started waits until node has a task running.
func waitRunning(t *testing.T, n *Node, k int) {
	t.Helper()
	checkFor(t, 30*time.Second, func() error {
		n.mu.Lock()
		defer n.mu.Unlock()
		if len(n.running) < k {
			return fmt.Errorf("node %s runs %d tasks, want %d", n.o.ID, len(n.running), k)
		}
		return nil
	})
}

// A node drained with a task still running past its drain timeout hands
// the task back (Nak): it is counted, and another node runs it at once,
// not after AckWait (an hour here, so only the hand-back can explain it).
func TestDrainHandsTaskBack(t *testing.T) {
	s := natsServer(t)
	srv := blockingScript(1, func(_ string, attempt int) llmtest.Turn {
		if attempt == 1 {
			return llmtest.Turn{Text: "never", Latency: llmtest.Duration(time.Hour)}
		}
		return llmtest.Turn{Text: "main.go:3"}
	})
	defer srv.Close()
	o1 := nodeOpts(t, s, srv, "n1")
	o1.AckWait, o1.DrainTimeout = time.Hour, 100*time.Millisecond
	n1 := startNodeWith(t, o1)
	run := startTeam(t, s, srv, "rd", nil)
	waitRunning(t, n1, 1)
	o2 := nodeOpts(t, s, srv, "n2")
	o2.AckWait = time.Hour
	n2 := startNodeWith(t, o2)
	if err := n1.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := n1.Stats(); st.HandedBack != 1 || st.Completed != 0 {
		t.Errorf("drained node: %+v, want one task handed back", st)
	}
	res, err := run.wait(t)
	if err != nil || res.Text != "all answered" {
		t.Fatalf("run %+v %v", res, err)
	}
	if st := n2.Stats(); st.Completed != 1 || st.Redelivered != 1 {
		t.Errorf("second node: %+v, want the handed-back task run there", st)
	}
	if got := rootToolResults(srv); len(got) != 1 || !strings.Contains(got[0], "main.go:3") || !strings.Contains(got[0], "Status: completed") {
		t.Errorf("the root got %q", got)
	}
}

// A task that runs for several AckWaits is kept alive by InProgress: it
// is delivered once, although a second node waits for work all along.
func TestLongTaskNotRedelivered(t *testing.T) {
	s := natsServer(t)
	const ackWait = 600 * time.Millisecond
	srv := blockingScript(1, func(string, int) llmtest.Turn {
		return llmtest.Turn{Text: "main.go:3", Latency: llmtest.Duration(4 * ackWait)}
	})
	defer srv.Close()
	var nodes []*Node
	for _, id := range []string{"n1", "n2"} {
		o := nodeOpts(t, s, srv, id)
		o.AckWait = ackWait
		nodes = append(nodes, startNodeWith(t, o))
	}
	run := startTeam(t, s, srv, "rl", nil)
	res, err := run.wait(t)
	if err != nil || res.Text != "all answered" {
		t.Fatalf("run %+v %v", res, err)
	}
	var done, again uint64
	for _, n := range nodes {
		st := n.Stats()
		done, again = done+st.Completed, again+st.Redelivered
	}
	if done != 1 || again != 0 {
		t.Errorf("%d completed, %d redelivered: want the long task run once", done, again)
	}
	if reqs := requestsOfKind(srv, "explore"); len(reqs) != 1 {
		t.Errorf("%d model calls for the explore agent, want 1", len(reqs))
	}
}

// A task whose every attempt ends without a result fails after MaxDeliver
// attempts, once, and the failure names each attempt and its node.
func TestMaxDeliverFailureNamesAttempts(t *testing.T) {
	s := natsServer(t)
	srv := blockingScript(1, func(string, int) llmtest.Turn {
		return llmtest.Turn{Text: "never", Latency: llmtest.Duration(time.Hour)}
	})
	defer srv.Close()
	run := startTeam(t, s, srv, "rm", nil)
	for i, id := range []string{"box-a", "box-b"} {
		o := nodeOpts(t, s, srv, id)
		o.MaxDeliver, o.DrainTimeout, o.AckWait = 2, 50*time.Millisecond, time.Hour
		n := startNodeWith(t, o)
		waitRunning(t, n, 1)
		if err := n.Drain(t.Context()); err != nil {
			t.Fatal(err)
		}
		if n.Stats().HandedBack != 1 {
			t.Fatalf("attempt %d: %+v", i+1, n.Stats())
		}
	}
	o := nodeOpts(t, s, srv, "box-c") // asks for work: the server sees the task is out of attempts
	o.MaxDeliver, o.AckWait = 2, time.Hour
	startNodeWith(t, o)
	res, err := run.wait(t)
	if err != nil || res.Text != "all answered" {
		t.Fatalf("run %+v %v", res, err)
	}
	got := rootToolResults(srv)
	if len(got) != 1 {
		t.Fatalf("the root got %d results: %q", len(got), got)
	}
	for _, want := range []string{"Status: failed", "after 2 delivery attempts", "attempt 1 on node box-a", "attempt 2 on node box-b"} {
		if !strings.Contains(got[0], want) {
			t.Errorf("the failed result lacks %q:\n%s", want, got[0])
		}
	}
	if strings.Contains(got[0], "never started") {
		t.Errorf("the failure blames attempts nobody started:\n%s", got[0])
	}
	if st := run.remote.Stats(); st.MaxDelivered != 1 {
		t.Errorf("remote stats %+v", st)
	}
}

// A node never runs more tasks at once than its slots: the model sees at
// most two of its requests in flight, and does see two.
func TestSlotsNeverExceeded(t *testing.T) {
	s := natsServer(t)
	var inflight, peak atomic.Int64
	release := make(chan struct{})
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{{ToolCalls: delegateCalls(10, false)}, {Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{{Dynamic: func(llmtest.Recorded) llmtest.Turn {
			now := inflight.Add(1)
			for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
			}
			<-release
			inflight.Add(-1)
			return llmtest.Turn{Text: "main.go:3"}
		}}}},
	}})
	defer srv.Close()
	o := nodeOpts(t, s, srv, "n1")
	o.Slots = 2
	n := startNodeWith(t, o)
	run := startTeam(t, s, srv, "rs", nil)
	for done := 0; done < 10; done++ {
		checkFor(t, 30*time.Second, func() error { // the node is full, or runs the last task
			if want := int64(min(2, 10-done)); inflight.Load() != want {
				return fmt.Errorf("%d model calls in flight, want %d", inflight.Load(), want)
			}
			return nil
		})
		release <- struct{}{}
	}
	if res, err := run.wait(t); err != nil || res.Text != "done" {
		t.Fatalf("run %+v %v", res, err)
	}
	if p := peak.Load(); p != 2 {
		t.Errorf("at most %d tasks ran at once on a node with 2 slots, want exactly 2", p)
	}
	if st := n.Stats(); st.Completed != 10 {
		t.Errorf("node stats %+v", st)
	}
}

// delegateCalls are n delegate calls of explore agents.
func delegateCalls(n int, background bool) []llmtest.ToolCall {
	var calls []llmtest.ToolCall
	for i := 0; i < n; i++ {
		args, _ := json.Marshal(map[string]any{"type": "explore", "task": fmt.Sprintf("q%d: where is main?", i), "background": background})
		calls = append(calls, llmtest.ToolCall{Name: "delegate", Args: args})
	}
	return calls
}

// A node that stops heartbeating (its connection is gone; nothing
// deletes its entry) drops out of the registry with the bucket's TTL, and
// out of the orchestrator's view of live nodes.
func TestRegistryEntryExpires(t *testing.T) {
	s := natsServer(t)
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	if err := wrap(t, nc).EnsureStreams(t.Context(), bus.StreamLimits{NodeTTL: 1500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	srv := blockingScript(0, nil)
	defer srv.Close()
	o := nodeOpts(t, s, srv, "n1")
	o.Heartbeat = 2 * time.Second
	if _, err := StartNode(t.Context(), o); err == nil || !strings.Contains(err.Error(), "too slow") {
		t.Fatalf("a heartbeat slower than a third of the TTL: %v", err)
	}
	o.Heartbeat = 300 * time.Millisecond
	startNodeWith(t, o)
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: "rt", Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	kv, _ := js.KeyValue(t.Context(), bus.NodesBucket)
	checkFor(t, 10*time.Second, func() error {
		if len(remote.Nodes()) != 1 {
			return fmt.Errorf("%d nodes seen", len(remote.Nodes()))
		}
		return nil
	})
	o.Bus.NATS().Close() // the node can no longer beat (nor leave)
	checkFor(t, 30*time.Second, func() error {
		if _, err := kv.Get(t.Context(), "n1"); err == nil {
			return fmt.Errorf("the entry of n1 is still in %s", bus.NodesBucket)
		}
		if len(remote.Nodes()) != 0 || remote.nodes.hasFreeSlot("explore") {
			return fmt.Errorf("the orchestrator still counts %d nodes", len(remote.Nodes()))
		}
		return nil
	})
}

// Control messages a node falls behind on are dropped by the client as a
// slow consumer: the node counts them in its stats (ControlDropped), and
// keeps the count once drained.
func TestNodeCountsDroppedControlMessages(t *testing.T) {
	s := natsServer(t)
	srv := fanoutScript(1, false)
	defer srv.Close()
	// The node's connection reports slow consumers as the node program's
	// does (bus.Connect logs them); here they are counted.
	var slow atomic.Int64
	nodeConn, err := nats.Connect(s.ClientURL(), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrSlowConsumer) {
			slow.Add(1)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nodeConn.Close)
	o := nodeOpts(t, s, srv, "n1")
	o.Bus = wrap(t, nodeConn)
	n := startNodeWith(t, o)
	if st := n.Stats(); st.ControlDropped != 0 {
		t.Fatalf("dropped before anything was sent: %+v", st)
	}
	// The run-cancel subscription holds at most 4 pending messages, and its
	// handler is stuck on the node's lock: of 64 cancels, the handler holds
	// one, 4 wait and the rest are dropped.
	const sent, pending = 64, 4
	n.ctlMu.Lock()
	runCancels := n.ctl[0]
	n.ctlMu.Unlock()
	if runCancels.Subject != bus.CtlSubject(DefaultPrefix, "*", "", ctlCancel) {
		t.Fatalf("the first control subscription is %s", runCancels.Subject)
	}
	if err := runCancels.SetPendingLimits(pending, -1); err != nil {
		t.Fatal(err)
	}
	nc := connect(t, s)
	n.mu.Lock()
	locked := true
	defer func() {
		if locked {
			n.mu.Unlock()
		}
	}()
	for i := range sent {
		if err := nc.Publish(bus.CtlSubject(DefaultPrefix, fmt.Sprintf("r%d", i), "", ctlCancel), []byte(`{"v":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, func() error {
		if d := n.Stats().ControlDropped; d < sent-pending-1 {
			return errorf("%d control messages counted as dropped, want at least %d", d, sent-pending-1)
		}
		return nil
	})
	n.mu.Unlock()
	locked = false
	checkFor(t, 30*time.Second, func() error {
		if slow.Load() == 0 {
			return errorf("no slow-consumer error reported on the node's connection")
		}
		return nil
	})
	dropped := n.Stats().ControlDropped
	if dropped > sent {
		t.Fatalf("%d dropped of %d sent", dropped, sent)
	}
	if err := n.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := n.Stats(); st.ControlDropped != dropped {
		t.Errorf("after the drain %d dropped, before it %d", st.ControlDropped, dropped)
	}
}
