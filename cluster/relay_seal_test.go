package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// A node's relayed event held back past the end of the run's root (the
// test plays the node: it takes the task, relays one event, publishes the
// result, and sends the task agent's agent.finished only once the run is
// ending, then the relay's end marker) is still stored before
// run.finished: a watcher that follows the run live and stops at
// run.finished, as `watch` does, gets it. A batch that comes after the
// run ended is refused, counted, and never stored. (Before the run waited
// for its nodes' relays, the held event was stored after run.finished and
// the watcher ended without it.)
func TestRelayedEventHeldPastTheRootsEndIsWatched(t *testing.T) {
	heldRelayRun(t, false)
}

// A node lost while the run waits for the end of its relay (it took the
// task, relayed one event and gave the result, then went silent) ends
// the wait at once: the run ends without waiting out relayEndWait, says
// nothing of a relay that did not end, and refuses what the lost node
// sends later. (Before, the run waited the whole relayEndWait and warned
// of one relay that had not ended.)
func TestLostNodesRelayIsNotAwaited(t *testing.T) {
	heldRelayRun(t, true)
}

// heldRelayRun plays a node that relays agent.started, gives the result
// and holds the task agent's agent.finished until the run is ending; then
// it sends the held event and the relay's end, or (lost) the node is
// reported lost instead.
func heldRelayRun(t *testing.T, lost bool) {
	s := natsServer(t)
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
		{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"q0: where is main?"}`)}}},
		{Text: "all answered"}}}}})
	defer srv.Close()
	nc := connect(t, s)
	conn := wrap(t, nc)
	if err := conn.EnsureStreams(t.Context(), bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	const run = "rs"
	watched := watchUntilFinished(t, conn, run)
	cons, err := conn.JetStream().CreateOrUpdateConsumer(t.Context(), conn.Names().Tasks, jetstream.ConsumerConfig{
		Durable: consumerName(DefaultPrefix, "explore", messages.ProtocolVersion), FilterSubject: TaskSubject(DefaultPrefix, "explore", messages.ProtocolVersion),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute, MaxDeliver: 5, MaxAckPending: -1})
	if err != nil {
		t.Fatal(err)
	}
	log := &logLines{}
	pub, err := conn.NewPublisher(bus.PublisherOptions{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: conn, Run: run, Placement: map[string]string{"explore": PlaceRemote},
		Events: pub, Relay: pub, Log: zerolog.New(log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remote.Close)
	team, err := actors.Start(t.Context(), actors.Options{Run: run, Workspace: workspace(t), Task: "find main", Client: modelClient(t, srv),
		Models: actors.Models{Default: "big"}, Events: pub, Placer: remote.Placer(), OnBudget: remote.ServeBudget,
		Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}}, Log: zerolog.Nop(),
		EventsDropped: func() uint64 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = pub.Flush(ctx)
			return pub.Dropped()
		}})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan actors.Result, 1)
	go func() {
		res, err := team.Wait(t.Context())
		if err != nil {
			t.Error(err)
		}
		ended <- res
	}()

	// The node: take the task, say so, relay agent.started, give the result.
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := <-batch.Messages()
	if !ok {
		t.Fatalf("the task was not delivered: %v", batch.Error())
	}
	task, err := DecodeTask(m.Data())
	if err != nil {
		t.Fatal(err)
	}
	d := newDelivery(task.Secret, task.ID, "n1", 1)
	notice, _ := json.Marshal(messages.StartNotice{Node: "n1", Attempt: 1})
	if _, err := nc.RequestMsg(&nats.Msg{Subject: bus.CtlSubject(DefaultPrefix, run, task.ID, ctlStarted), Data: notice,
		Header: d.sign(nil, notice)}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	agentEvent := func(typ string, seq uint64, data any) messages.Event {
		ev, err := messages.NewEvent(run, task.ID, typ, seq, data)
		if err != nil {
			t.Fatal(err)
		}
		ev.Parent, ev.Kind, ev.Node, ev.Attempt = task.Parent, task.Kind, "n1", 1
		return ev
	}
	relay := func(data []byte, end bool) messages.EventBatchReply {
		t.Helper()
		h := d.sign(nil, data)
		if end {
			h.Set(messages.RelayEndHeader, "1")
		}
		rep, err := decodeReply(nc.RequestMsg(&nats.Msg{Subject: bus.CtlSubject(DefaultPrefix, run, task.ID, ctlEvents), Data: data, Header: h}, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := relay(batchOf(agentEvent(messages.EvtAgentStarted, 1, messages.AgentStarted{Task: task.Task})), false); rep.Accepted != 1 {
		t.Fatalf("agent.started relayed: %+v", rep)
	}
	res, _ := json.Marshal(messages.Result{V: messages.ProtocolVersion, Run: run, Agent: task.ID, Kind: task.Kind, Node: "n1",
		Attempt: 1, Status: "completed", Reason: "finished", Text: "q0: main.go:3", RelayEnds: true})
	h := d.sign(nats.Header{jetstream.MsgIDHeader: []string{"result-1"}}, res)
	if _, err := conn.JetStream().PublishMsg(t.Context(), &nats.Msg{Subject: bus.ResultSubject(DefaultPrefix, run, task.ID, d.tag), Data: res, Header: h}); err != nil {
		t.Fatal(err)
	}
	if err := m.Ack(); err != nil {
		t.Fatal(err)
	}

	// The root has its result and ends; the run ends once the relay has.
	// The held event goes only then (or once run.finished is stored, as it
	// was at once before).
	checkFor(t, 30*time.Second, func() error {
		remote.mu.Lock()
		waiting := remote.relaysOpen[task.ID] == 1
		remote.mu.Unlock()
		if remote.ending.Load() && waiting || storedHas(t, conn, run, messages.EvtRunFinished) {
			return nil
		}
		return errors.New("the run has not ended yet")
	})
	held := agentEvent(messages.EvtAgentFinished, 2, messages.AgentEnded{Status: "completed", Reason: "finished", Model: "big"})
	if lost {
		remote.nodeLost(messages.NodeInfo{ID: "n1", Name: "n1"})
	} else {
		if rep := relay(batchOf(held), false); rep.Accepted != 1 {
			t.Errorf("the held event relayed: %+v", rep)
		}
		if rep := relay(nil, true); rep.Error != nil {
			t.Errorf("the relay's end: %+v", rep.Error)
		}
	}
	r := <-ended
	if log.has("without the end of every node's events") {
		t.Errorf("the run waited for a relay that did not end: %s", log.b.String())
	}
	if r.Status != actors.StatusCompleted {
		t.Fatalf("run: %+v", r.AgentResult)
	}
	late := agentEvent(messages.EvtToolFinished, 3, messages.ToolFinished{Tool: "grep"})
	if rep := relay(batchOf(late), false); rep.Error == nil || rep.Refused != 1 || rep.Accepted != 0 {
		t.Errorf("a batch after the run ended: %+v", rep)
	}
	if st := remote.Stats(); st.Events != 1 {
		t.Errorf("%d events refused, want 1 (the batch after the run's end)", st.Events)
	}
	if err := pub.Close(t.Context()); err != nil || pub.Dropped() != 0 {
		t.Fatalf("the publisher: %v, %d dropped", err, pub.Dropped())
	}
	var got []string
	for _, ev := range <-watched {
		got = append(got, ev.Agent+" "+ev.Type)
	}
	want := fmt.Sprintf("%s %s", task.ID, messages.EvtAgentFinished)
	if lost {
		want = fmt.Sprintf("%s %s", task.ID, messages.EvtAgentStarted)
	}
	if !slices.Contains(got, want) || got[len(got)-1] != "run "+messages.EvtRunFinished {
		t.Errorf("the watcher ended without the held event (%s): %v", want, got)
	}
	for _, ev := range storedRunEvents(t, conn) {
		if ev.Agent == task.ID && ev.Type == messages.EvtToolFinished {
			t.Errorf("the batch sent after the run ended was stored: %+v", ev)
		}
	}
}

// watchUntilFinished follows run's events live, as watch does, and hands
// over those it saw up to and including run.finished.
func watchUntilFinished(t *testing.T, c *bus.Conn, run string) <-chan []messages.Event {
	t.Helper()
	es, err := c.Events(t.Context(), bus.WatchOptions{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan []messages.Event, 1)
	go func() {
		defer es.Stop()
		var seen []messages.Event
		for d := range es.C {
			seen = append(seen, d.Event)
			if d.Event.Type == messages.EvtRunFinished {
				break
			}
		}
		out <- seen
	}()
	return out
}

// storedHas says whether the stream holds an event of run of type typ.
func storedHas(t *testing.T, c *bus.Conn, run, typ string) bool {
	for _, ev := range storedRunEvents(t, c) {
		if ev.Run == run && ev.Type == typ {
			return true
		}
	}
	return false
}
