package cluster

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/testport"
	"github.com/troupe-ai/troupe/llm/llmtest"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
)

// A node fences a task well before the run may hand it on: three
// quarters of the run's lost timeout (the task's, or two heartbeats), or
// half the AckWait, but never under a heartbeat and a half.
func TestFenceAfter(t *testing.T) {
	for _, c := range []struct {
		beat, ackWait time.Duration
		lostMS        int64
		want          time.Duration
	}{
		{DefaultHeartbeat, DefaultAckWait, 0, 3 * time.Second},            // the defaults
		{DefaultHeartbeat, DefaultAckWait, 8000, 5 * time.Second},         // node.lease_timeout 8s: half the AckWait
		{DefaultHeartbeat, DefaultAckWait, 6000, 4500 * time.Millisecond}, // node.lease_timeout 6s
		{DefaultHeartbeat, 4 * time.Second, 0, 3 * time.Second},           // a short AckWait: a beat and a half at least
		{100 * time.Millisecond, time.Hour, 1000, 750 * time.Millisecond}, // fast beats, a fixed timeout
		{100 * time.Millisecond, time.Hour, 0, 150 * time.Millisecond},    // fast beats
		{DefaultHeartbeat, DefaultAckWait, 1000, 3 * time.Second},         // a timeout under two beats: not under a beat and a half
	} {
		n := &Node{o: NodeOptions{Heartbeat: c.beat, AckWait: c.ackWait}}
		if got := n.fenceAfter(messages.Task{LostMS: c.lostMS}); got != c.want {
			t.Errorf("beat %s, ack wait %s, lost %d ms: fence after %s, want %s", c.beat, c.ackWait, c.lostMS, got, c.want)
		}
	}
}

// A node that was only slow (or cut off) sends its result after the run
// handed its task to another node: the result proves the secret the task
// had before, and is refused; the task goes on waiting for the new
// delivery's result, which ends it.
func TestLateResultOfAReissuedTaskRefused(t *testing.T) {
	s := natsServer(t)
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	const run, task = "lr", "explore-1"
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: run, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	late := waitingTask(remote, task, "nA")
	remote.mu.Lock()
	c := remote.waiting[task]
	remote.mu.Unlock()
	c.mu.Lock()
	c.node, c.attempt = "nA", 1
	c.mu.Unlock()
	c.reissue("nA") // nA found lost
	c.mu.Lock()
	fresh := newDelivery(c.secret, task, "nB", c.prior+1)
	c.mu.Unlock()

	result := func(d *delivery, node string, attempt int, text string) {
		publishSignedResult(t, js, run, task, d, node, attempt, text)
	}
	result(late, "nA", 1, "late")
	checkFor(t, 10*time.Second, func() error {
		if remote.Stats().Forged != 1 {
			return fmt.Errorf("stats %+v", remote.Stats())
		}
		return nil
	})
	select {
	case res := <-c.done:
		t.Fatalf("the late result ended the task: %+v", res)
	default:
	}
	result(fresh, "nB", 2, "current")
	select {
	case res := <-c.done:
		if res.Text != "current" {
			t.Errorf("the task ended on %+v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the new delivery's result was not taken")
	}
	if st := remote.Stats(); st.Forged != 1 || st.Reissued != 1 {
		t.Errorf("stats %+v", st)
	}
}

// A node's link to the server stalls while its agent waits on the model,
// for longer than its fence and shorter than the run takes to find it
// lost: the node gives the task up (agent stopped, no result, no ack),
// and once its link is back tells the run, which queues the task again at
// once: the run finishes although the queue would redeliver the task only
// after an hour (AckWait), and the node was never lost.
func TestTaskGivenUpWhileCutOffQueuedAgainAtOnce(t *testing.T) {
	s := natsServer(t)
	link := testport.Stall(t, strings.TrimPrefix(s.ClientURL(), "nats://"))
	calling := make(chan struct{})
	var calls atomic.Int32
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"q0: where is main?"}`)}}},
			{Text: "all answered"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{{Dynamic: func(llmtest.Recorded) llmtest.Turn {
			if calls.Add(1) == 1 {
				close(calling)
				return llmtest.Turn{Latency: llmtest.Duration(10 * time.Minute), Text: "q0: main.go:3"}
			}
			return llmtest.Turn{Text: "q0: main.go:3"}
		}}}},
	}})
	defer srv.Close()
	n := startNodeWith(t, NodeOptions{Bus: wrap(t, dial(t, "nats://"+link.Addr(), "node n1").NATS()), ID: "n1", Name: "n1",
		Kinds: []string{"explore"}, Slots: 1,
		Agent: actors.Options{Workspace: workspace(t), Client: modelClient(t, srv), Models: actors.Models{Default: "big", Cheap: "small"},
			Log: zerolog.Nop()},
		Events: &recorder{}, AckWait: time.Hour, Log: zerolog.Nop()})
	nodeEvents := &recorder{}
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, connect(t, s)), Run: "ro",
		Placement: map[string]string{"explore": PlaceRemote}, Events: nodeEvents, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	type outcome struct {
		res actors.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := actors.Run(t.Context(), actors.Options{Run: "ro", Workspace: workspace(t), Task: "find main",
			Client: modelClient(t, srv), Models: actors.Models{Default: "big", Cheap: "small"}, Events: &recorder{},
			Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}},
			Placer:   remote.Placer(), OnBudget: remote.ServeBudget, Log: zerolog.Nop()})
		done <- outcome{res, err}
	}()
	select {
	case <-calling:
	case <-time.After(time.Minute):
		t.Fatal("the node's agent never called the model")
	}
	link.Pause(true)
	checkFor(t, 30*time.Second, func() error {
		if st := n.Stats(); st.Fenced != 1 || srv.InFlight() != 0 {
			return errorf("node %+v, %d model calls in flight", st, srv.InFlight())
		}
		return nil
	})
	link.Pause(false)
	select {
	case o := <-done:
		if o.err != nil || o.res.Status != actors.StatusCompleted || o.res.Text != "all answered" {
			t.Fatalf("run: %+v %v", o.res.AgentResult, o.err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the run did not finish: node %+v, remote %+v", n.Stats(), remote.Stats())
	}
	if st := remote.Stats(); st.Reissued != 1 {
		t.Errorf("remote %+v: want the task queued again once", st)
	}
	if st := n.Stats(); st.Taken != 2 || st.Completed != 1 {
		t.Errorf("node %+v: want the task taken twice (given up, then again), completed once", st)
	}
	for _, ev := range nodeEvents.events() {
		if ev.Type == messages.EvtNodeLeft {
			t.Errorf("the node was found lost: %s", ev.Data)
		}
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("%d model calls for the task, want 2 (the one given up, the one that answered)", got)
	}
}

// The run revokes a node's copy of a task (attempt 1) and queues the task
// again; the same node takes the new delivery (attempt 2) before a copy of
// the revoke reaches it (a cancel and a task travel apart): that revoke
// names attempt 1 and leaves the new copy running, which answers.
func TestLateRevokeSparesTheNodesLaterDelivery(t *testing.T) {
	s := natsServer(t)
	first, second, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"q0: where is main?"}`)}}},
			{Text: "all answered"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{{Dynamic: func(llmtest.Recorded) llmtest.Turn {
			switch calls.Add(1) {
			case 1:
				close(first)
				return llmtest.Turn{Latency: llmtest.Duration(10 * time.Minute), Text: "q0: never"}
			case 2:
				close(second)
				<-release
			}
			return llmtest.Turn{Text: "q0: main.go:3"}
		}}}},
	}})
	defer srv.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	nc := connect(t, s)
	n := startNodeWith(t, NodeOptions{Bus: wrap(t, connect(t, s)), ID: "n1", Name: "n1", Kinds: []string{"explore"}, Slots: 1,
		Agent: actors.Options{Workspace: workspace(t), Client: modelClient(t, srv), Models: actors.Models{Default: "big", Cheap: "small"},
			Log: zerolog.Nop()},
		Events: &recorder{}, AckWait: time.Hour, Log: zerolog.Nop()})
	const run = "lrv"
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: run,
		Placement: map[string]string{"explore": PlaceRemote}, Events: &recorder{}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	done := make(chan error, 1)
	go func() {
		res, err := actors.Run(t.Context(), actors.Options{Run: run, Workspace: workspace(t), Task: "find main",
			Client: modelClient(t, srv), Models: actors.Models{Default: "big", Cheap: "small"}, Events: &recorder{},
			Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}},
			Placer:   remote.Placer(), OnBudget: remote.ServeBudget, Log: zerolog.Nop()})
		if err == nil && (res.Status != actors.StatusCompleted || res.Text != "all answered") {
			err = fmt.Errorf("run: %+v", res.AgentResult)
		}
		done <- err
	}()
	<-first
	var c *remoteChild
	checkFor(t, 30*time.Second, func() error {
		remote.mu.Lock()
		for _, w := range remote.waiting {
			c = w
		}
		remote.mu.Unlock()
		if c == nil || c.holder() != "n1" {
			return errorf("the run has not heard that n1 took the task")
		}
		return nil
	})
	c.reissue("n1") // as if n1 were found lost: its attempt 1 revoked, the task queued again
	<-second        // n1 stopped attempt 1 and took attempt 2
	late, _ := json.Marshal(messages.Cancel{V: messages.ProtocolVersion, Reason: "claim revoked: late copy", Node: "n1", Attempt: 1})
	probe, _ := json.Marshal(messages.Cancel{V: messages.ProtocolVersion, Reason: "probe"})
	for _, m := range []struct {
		agent string
		data  []byte
	}{{c.task.ID, late}, {"probe", probe}} {
		if err := nc.Publish(bus.CtlSubject(remote.o.Bus.Prefix(), run, m.agent, ctlCancel), m.data); err != nil {
			t.Fatal(err)
		}
	}
	checkFor(t, 30*time.Second, func() error { // the node handles the cancels in order: the late one is handled
		if !n.gone.has(run, "probe") {
			return errorf("the node has not handled the cancels")
		}
		return nil
	})
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the run did not finish: node %+v, remote %+v", n.Stats(), remote.Stats())
	}
	if st := n.Stats(); st.Taken != 2 || st.Completed != 1 || st.Revoked != 1 {
		t.Errorf("node %+v: want attempt 1 revoked, attempt 2 completed", st)
	}
}
