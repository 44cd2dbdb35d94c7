package cluster

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
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

// A start notice whose answer is lost (a lost server, an election) is
// sent again until the run answers: two unanswered, the third answered.
func TestStartNoticeSentUntilAnswered(t *testing.T) {
	s := natsServer(t)
	conn := wrap(t, connect(t, s))
	n := &Node{o: NodeOptions{Bus: conn, ID: "n1", Name: "n1", Log: zerolog.Nop()}, ctx: t.Context()}
	var asked atomic.Int32
	sub, err := wrap(t, connect(t, s)).NATS().Subscribe(bus.CtlSubject(DefaultPrefix, "rn", "*", ctlStarted), func(m *nats.Msg) {
		if asked.Add(1) < 3 {
			return // lost
		}
		b, _ := json.Marshal(messages.StartReply{V: messages.ProtocolVersion, Mine: true})
		_ = m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	task := actors.ChildTask{Run: "rn", ID: "explore-1", Kind: "explore", Secret: "s", Claims: true, Attempt: 1}
	mine, why := n.announce(task, newDelivery("s", task.ID, "n1", 1), messages.StartNotice{Node: "n1", Attempt: 1}, zerolog.Nop())
	if !mine || why != "" || asked.Load() != 3 {
		t.Fatalf("mine %v (%q) after %d notices: want the third answered, yes", mine, why, asked.Load())
	}
}

// A delivery the run disowns (it queued the task again, or was
// cancelled) is dropped by the node unrun: no model call, no result.
func TestDisownedDeliveryNotRun(t *testing.T) {
	s := natsServer(t)
	srv := blockingScript(1, func(string, int) llmtest.Turn { return llmtest.Turn{Text: "main.go:3"} })
	defer srv.Close()
	nd := startNodeWith(t, nodeOpts(t, s, srv, "n1"))
	nc := connect(t, s)
	var asked atomic.Int32
	sub, err := nc.Subscribe(bus.CtlSubject(DefaultPrefix, "rd", "*", ctlStarted), func(m *nats.Msg) {
		asked.Add(1)
		b, _ := json.Marshal(messages.StartReply{V: messages.ProtocolVersion, Why: "queued again"})
		_ = m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	js, _ := jetstream.New(nc)
	b, _ := jsonTask(messages.Task{V: messages.ProtocolVersion, Run: "rd", ID: "explore-d", Parent: "root", Kind: "explore",
		Task: "q0: where is main?", Secret: "k", Claims: true})
	if _, err := js.Publish(t.Context(), TaskSubject(DefaultPrefix, "explore", messages.ProtocolVersion), b); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 20*time.Second, func() error {
		if st := nd.Stats(); st.Disowned != 1 {
			return fmt.Errorf("node stats %+v", st)
		}
		return nil
	})
	if st := nd.Stats(); st.Taken != 0 || st.Completed != 0 || asked.Load() != 1 || len(requestsOfKind(srv, "explore")) != 0 {
		t.Errorf("a disowned delivery ran: stats %+v, %d notices, %d model calls", st, asked.Load(), len(requestsOfKind(srv, "explore")))
	}
}

// A delivery lost on its way to a node (taken here by a puller that never
// says a word, as when the server handing it out dies) costs the task
// lostDelivery, not AckWait (a minute here): the run sees the queue count
// it delivered with no word of a node and queues it again. The lost
// delivery, should it turn up after all, is disowned; the task runs once.
func TestLostDeliveryQueuedAgain(t *testing.T) {
	s := natsServer(t)
	srv := blockingScript(1, func(string, int) llmtest.Turn { return llmtest.Turn{Text: "main.go:3"} })
	defer srv.Close()
	nc := connect(t, s)
	conn := wrap(t, nc)
	if err := conn.EnsureStreams(t.Context(), bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	cons, err := conn.JetStream().CreateOrUpdateConsumer(t.Context(), conn.Names().Tasks, jetstream.ConsumerConfig{
		Durable: consumerName(DefaultPrefix, "explore", messages.ProtocolVersion), FilterSubject: TaskSubject(DefaultPrefix, "explore", messages.ProtocolVersion),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute, MaxDeliver: 5, MaxAckPending: -1})
	if err != nil {
		t.Fatal(err)
	}
	run := startTeam(t, s, srv, "rl", nil)
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := <-batch.Messages()
	if !ok {
		t.Fatalf("the task was not delivered: %v", batch.Error())
	}
	lost, err := DecodeTask(m.Data())
	if err != nil || !lost.Claims {
		t.Fatalf("task %+v %v: want one that asks for claims", lost, err)
	}
	checkFor(t, 20*time.Second, func() error {
		if st := run.remote.Stats(); st.LostDeliveries != 1 {
			return fmt.Errorf("run stats %+v", st)
		}
		return nil
	})
	// The lost delivery turns up: the run disowns it.
	notice, _ := json.Marshal(messages.StartNotice{Node: "late", Attempt: 1})
	rep, err := nc.RequestMsg(&nats.Msg{Subject: bus.CtlSubject(DefaultPrefix, "rl", lost.ID, ctlStarted), Data: notice,
		Header: newDelivery(lost.Secret, lost.ID, "late", 1).sign(nil, notice)}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := messages.Decode[messages.StartReply](rep.Data, maxRequestBytes); err != nil || r.Mine {
		t.Fatalf("the lost delivery's claim was answered %+v %v: want it disowned", r, err)
	}
	o := nodeOpts(t, s, srv, "n1")
	o.AckWait = time.Minute
	nd := startNodeWith(t, o)
	res, err := run.wait(t)
	if err != nil || res.Text != "all answered" {
		t.Fatalf("run %+v %v", res, err)
	}
	for _, r := range rootToolResults(srv) {
		if !strings.Contains(r, "Status: completed") {
			t.Errorf("the task did not complete: %s", r)
		}
	}
	if st := nd.Stats(); st.Taken != 1 || st.Completed != 1 || len(requestsOfKind(srv, "explore")) != 1 {
		t.Errorf("node %+v, %d explore model calls: want the task run once", st, len(requestsOfKind(srv, "explore")))
	}
}
