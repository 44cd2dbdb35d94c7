package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// A task's messages are bound to its current delivery: once a later
// delivery (attempt 2 on node B) has started, the node of the earlier one
// (attempt 1 on A) can no longer end the task or charge its budget, and
// start notices and budget requests that prove no delivery of a task of
// the run are refused. Every refusal is counted; the current delivery's
// requests and result pass.
func TestMessagesBoundToTheCurrentDelivery(t *testing.T) {
	s := natsServer(t)
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	const run, task = "rd", "explore-1"
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: run, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	local := budgetActor(t, run, budget.Limits{Tokens: 100_000})
	if err := remote.ServeBudget(local); err != nil {
		t.Fatal(err)
	}
	for _, a := range []budget.Acquire{{Agent: "root", Kind: "root", Estimate: 50_000}, {Agent: task, Parent: "root", Kind: "explore", Estimate: 1000},
		{Agent: "explore-2", Parent: "root", Kind: "explore", Estimate: 1000}} {
		if _, err := local.Acquire(t.Context(), a, nil); err != nil {
			t.Fatal(err)
		}
	}
	first := waitingTask(remote, task, "nA")
	remote.mu.Lock()
	c := remote.waiting[task]
	remote.mu.Unlock()
	second := newDelivery(c.secret, task, "nB", 2)

	notice := func(d *delivery, n messages.StartNotice) {
		b, _ := json.Marshal(n)
		if err := nc.PublishMsg(&nats.Msg{Subject: bus.CtlSubject(DefaultPrefix, run, task, ctlStarted), Data: b, Header: d.sign(nil, b)}); err != nil {
			t.Fatal(err)
		}
	}
	notice(nil, messages.StartNotice{Node: "nX", Attempt: 3})                 // proves nothing
	notice(first, messages.StartNotice{Node: "nB", Attempt: 2})               // A's proof, B's name
	notice(second, messages.StartNotice{Node: "nB", Name: "box", Attempt: 2}) // the redelivery starts on B
	// The redelivery is current once B holds the task and A's delivery is
	// stale (current(2, "nB") alone holds before any notice is taken:
	// the two refused notices counted, the third may still be on its way).
	checkFor(t, 10*time.Second, func() error {
		if holder, stale := c.holder(), c.current(1, "nA"); holder != "nB" || stale == nil || remote.Stats().Notices != 2 {
			return fmt.Errorf("held by %q, attempt 1 on nA: %v, stats %+v", holder, stale, remote.Stats())
		}
		return nil
	})

	// Budget: only B's requests for the task's own agents pass.
	usage := budget.Usage{Agent: task, Tokens: 10}
	for what, bc := range map[string]*BudgetClient{
		"unproven": NewBudgetClient(nc, DefaultPrefix, run, "nX"),
		"stale":    NewBudgetClient(nc, DefaultPrefix, run, "nA").withDelivery(first),
	} {
		if _, err := bc.Usage(t.Context(), usage); !errors.Is(err, budget.ErrInvalidRequest) || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s usage: %v", what, err)
		}
	}
	current := NewBudgetClient(nc, DefaultPrefix, run, "nB").withDelivery(second)
	if _, err := current.Usage(t.Context(), budget.Usage{Agent: "explore-2", Tokens: 10}); !errors.Is(err, budget.ErrInvalidRequest) {
		t.Errorf("usage for another task's agent: %v", err)
	}
	if _, err := current.Acquire(t.Context(), budget.Acquire{Agent: "explore-9", Parent: "root", Kind: "explore", Estimate: 10}, nil); !errors.Is(err, budget.ErrInvalidRequest) {
		t.Errorf("acquire under another agent than the task's: %v", err)
	}
	if _, err := current.Usage(t.Context(), usage); err != nil {
		t.Errorf("the current delivery's usage: %v", err)
	}
	if _, err := current.Acquire(t.Context(), budget.Acquire{Agent: "explore-1-child", Parent: task, Kind: "explore", Estimate: 10}, nil); err != nil {
		t.Errorf("the current delivery's acquire for a child: %v", err)
	}
	if _, err := current.Release(t.Context(), budget.Release{Agent: "explore-1-child"}); err != nil {
		t.Errorf("the child's release: %v", err)
	}
	if st := remote.Stats(); st.Budget != 4 {
		t.Errorf("refused budget requests: %+v, want 4", st)
	}

	// Results: A's (stale) is refused, B's ends the task.
	result := func(d *delivery, node string, attempt int, text string) {
		publishSignedResult(t, js, run, task, d, node, attempt, text)
	}
	result(first, "nA", 1, "stale")
	checkFor(t, 10*time.Second, func() error {
		if remote.Stats().Forged != 1 {
			return fmt.Errorf("stats %+v", remote.Stats())
		}
		return nil
	})
	result(second, "nB", 2, "current")
	select {
	case res := <-c.done:
		if res.Text != "current" {
			t.Errorf("the task ended on %+v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the current delivery's result was not taken")
	}
	if st := remote.Stats(); st.Forged != 1 || st.Duplicates != 0 || st.Notices != 2 {
		t.Errorf("stats %+v", st)
	}
}

// A node may pull a task with any reply subject, so the server can be
// made to deliver a task onto a control subject: a node ignores control
// messages delivered by a stream (their reply is the server's ack
// subject), and a requester's cancel still works.
func TestControlFromAStreamIgnored(t *testing.T) {
	s := natsServer(t)
	srv := fanoutScript(0, false)
	defer srv.Close()
	n := startNode(t, s, srv, "n1", 1, &recorder{})
	defer n.Drain(t.Context())
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	// A real redirection: a pull request on the task consumer whose reply
	// subject is the run-wide cancel of run "rr".
	task, _ := json.Marshal(messages.Task{V: messages.ProtocolVersion, Run: "other", ID: "explore-1", Parent: "root", Kind: "worker",
		Task: "q", Model: "small"})
	if _, err := js.Publish(t.Context(), TaskSubject(DefaultPrefix, "worker", messages.ProtocolVersion), task); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateOrUpdateConsumer(t.Context(), bus.TasksStream, jetstream.ConsumerConfig{Durable: "redirect",
		FilterSubject: TaskSubject(DefaultPrefix, "worker", messages.ProtocolVersion), AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	heard := make(chan *nats.Msg, 1)
	sub, err := nc.ChanSubscribe(bus.CtlSubject(DefaultPrefix, "rr", "", ctlCancel), heard)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+bus.TasksStream+".redirect", bus.CtlSubject(DefaultPrefix, "rr", "", ctlCancel),
		[]byte(`{"batch":1}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-heard:
		if !fromStream(m) {
			t.Fatalf("the redirected task came with reply %q", m.Reply)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not deliver the task onto the cancel subject")
	}
	// The node saw it too (same server, same order of delivery): a cancel
	// published after it is handled after it.
	if err := nc.Publish(bus.CtlSubject(DefaultPrefix, "rr2", "", ctlCancel), []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 10*time.Second, func() error {
		if !n.gone.has("rr2", "") {
			return fmt.Errorf("the requester's cancel was not taken")
		}
		return nil
	})
	if n.gone.has("rr", "") {
		t.Error("a task delivered onto the cancel subject cancelled the run")
	}
}
