package cluster

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// oneExploreRun starts a run on nc whose root delegates one explore
// task to the nodes, and returns its remote side and its end.
func oneExploreRun(t *testing.T, nc *nats.Conn, run string, srv *llmtest.Server) (*Remote, <-chan actors.Result) {
	t.Helper()
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: run,
		Placement: map[string]string{"explore": PlaceRemote}, Events: &recorder{}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remote.Close)
	done := make(chan actors.Result, 1)
	go func() {
		res, err := actors.Run(t.Context(), actors.Options{Run: run, Workspace: workspace(t), Task: "find main",
			Client: modelClient(t, srv), Models: actors.Models{Default: "big", Cheap: "small"}, Events: &recorder{},
			Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}},
			Placer:   remote.Placer(), OnBudget: remote.ServeBudget, Log: zerolog.Nop()})
		if err != nil {
			res.Status, res.Err = actors.StatusFailed, err.Error()
		}
		done <- res
	}()
	return remote, done
}

// exploreNode starts node n1 on s: one slot for explore tasks, an AckWait
// of an hour (no redelivery in a test's time).
func exploreNode(t *testing.T, s *server.Server, srv *llmtest.Server) *Node {
	return startNodeWith(t, NodeOptions{Bus: wrap(t, connect(t, s)), ID: "n1", Name: "n1", Kinds: []string{"explore"}, Slots: 1,
		Agent: actors.Options{Workspace: workspace(t), Client: modelClient(t, srv), Models: actors.Models{Default: "big", Cheap: "small"},
			Log: zerolog.Nop()},
		Events: &recorder{}, AckWait: time.Hour, Log: zerolog.Nop()})
}

// pacedExplore is a model whose root delegates one explore task and
// whose explore agent answers once release is closed; calling is closed
// at its first call.
func pacedExplore(calling, release chan struct{}) *llmtest.Server {
	return llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"q0: where is main?"}`)}}},
			{Text: "all answered"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{{Dynamic: func(llmtest.Recorded) llmtest.Turn {
			select {
			case <-calling:
			default:
				close(calling)
			}
			<-release
			return llmtest.Turn{Text: "q0: main.go:3"}
		}}}},
	}})
}

// checkOneAnswer checks that the run ended with its one sub-agent
// completed.
func checkOneAnswer(t *testing.T, done <-chan actors.Result, remote *Remote) {
	t.Helper()
	select {
	case res := <-done:
		if res.Status != actors.StatusCompleted || res.SubAgents.Completed != 1 || res.SubAgents.Failed != 0 {
			t.Fatalf("run: %+v, sub-agents %+v (remote %+v)", res.AgentResult, res.SubAgents, remote.Stats())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the run did not finish: remote %+v", remote.Stats())
	}
	if st := remote.Stats(); st.Terminated != 0 || st.Deleted == 0 {
		t.Errorf("remote %+v: want the deletion taken as no refusal", st)
	}
}

// The server terminates a delivery on its own when the task's message
// leaves the queue while a node holds it unacked (on a hub: the node's ack
// crossing a lost server, as seen in CI; here: the message removed by
// hand). That is no refusal: the task is settled by the node's result.
func TestTaskWhoseMessageLeftTheQueueEndsOnItsNodesResult(t *testing.T) {
	s := natsServer(t)
	calling, release := make(chan struct{}), make(chan struct{})
	srv := pacedExplore(calling, release)
	defer srv.Close()
	defer close(release)
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	n := exploreNode(t, s, srv)
	remote, done := oneExploreRun(t, nc, "dl", srv)
	<-calling
	c := onlyWaiting(t, remote)
	checkFor(t, 30*time.Second, func() error {
		if c.holder() != "n1" {
			return errorf("the run has not heard that n1 took the task")
		}
		return nil
	})
	deleteQueued(t, js, remote, c.queued())
	checkFor(t, 30*time.Second, func() error {
		if st := remote.Stats(); st.Deleted == 0 && st.Terminated == 0 {
			return errorf("no terminated advisory handled yet: %+v", st)
		}
		return nil
	})
	release <- struct{}{}
	checkOneAnswer(t, done, remote)
	if st := n.Stats(); st.Taken != 1 || st.Completed != 1 {
		t.Errorf("node %+v: want the task taken and completed once", st)
	}
}

// onlyWaiting waits for the run's one waiting task.
func onlyWaiting(t *testing.T, remote *Remote) *remoteChild {
	t.Helper()
	var c *remoteChild
	checkFor(t, 30*time.Second, func() error {
		remote.mu.Lock()
		defer remote.mu.Unlock()
		for _, w := range remote.waiting {
			c = w
		}
		if c == nil || c.queued() == 0 {
			return errorf("no task queued yet")
		}
		return nil
	})
	return c
}

// deleteQueued removes the task message seq from the run's queue, as an
// operator would.
func deleteQueued(t *testing.T, js jetstream.JetStream, remote *Remote, seq uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, remote.o.Bus.Names().Tasks)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, seq); err != nil {
		t.Fatalf("delete task message %d: %v", seq, err)
	}
}

// A delivery whose message leaves the queue before any node spoke of it
// (its taker silent, then gone) is terminated by the server too: nothing
// would deliver the task again, so the run queues it again, and a node
// answers it.
func TestTaskWhoseMessageLeftTheQueueUnheardIsQueuedAgain(t *testing.T) {
	s := natsServer(t)
	calling, release := make(chan struct{}), make(chan struct{})
	srv := pacedExplore(calling, release)
	defer srv.Close()
	close(release)
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	remote, done := oneExploreRun(t, nc, "du", srv)
	c := onlyWaiting(t, remote)
	// A taker that never speaks: the queue's consumer, as a node makes it.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	prefix := remote.o.Bus.Prefix()
	cons, err := js.CreateOrUpdateConsumer(ctx, remote.o.Bus.Names().Tasks, jetstream.ConsumerConfig{
		Durable: consumerName(prefix, "explore", messages.ProtocolVersion), FilterSubject: TaskSubject(prefix, "explore", messages.ProtocolVersion),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Hour, MaxDeliver: 3, MaxAckPending: -1})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		md, _ := m.Metadata()
		if md == nil || md.Sequence.Stream != c.queued() {
			t.Fatalf("took %+v, want the task at %d", md, c.queued())
		}
	}
	deleteQueued(t, js, remote, c.queued())
	checkFor(t, 30*time.Second, func() error {
		if st := remote.Stats(); st.Deleted == 0 && st.Terminated == 0 {
			return errorf("no terminated advisory handled yet: %+v", st)
		}
		return nil
	})
	n := exploreNode(t, s, srv)
	checkOneAnswer(t, done, remote)
	if st := n.Stats(); st.Completed != 1 {
		t.Errorf("node %+v: want the task queued again completed", st)
	}
	t.Logf("remote %+v", remote.Stats())
}
