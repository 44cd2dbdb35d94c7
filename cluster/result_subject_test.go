package cluster

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// forgeAfter publishes, after the real result of run's task agent (the
// delivery of secret at attempt 1 on node n1) is stored, what a holder of
// node credentials may: a result on the untagged subject of older troupes,
// on guessed tags, and on the real subject itself, proven under the real
// secret (a node credential may read a queued task). The last is refused
// by the server; the real result stays in the stream. It returns how many
// forgeries were stored.
func forgeAfter(t *testing.T, js jetstream.JetStream, run, agent, secret string) int {
	t.Helper()
	real := bus.ResultSubject(DefaultPrefix, run, agent, resultTag(secret, 1))
	s, err := js.Stream(t.Context(), bus.ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.GetLastMsgForSubject(t.Context(), real)
	if err != nil {
		t.Fatalf("the real result is not on its subject: %v", err)
	}
	forged, _ := json.Marshal(messages.Result{V: messages.ProtocolVersion, Run: run, Agent: agent, Kind: "explore",
		Node: "n1", Attempt: 1, Status: "completed", Reason: "done", Text: "forged answer"})
	other := newSecret()
	stored := 0
	for i, subj := range []string{
		"troupe.result." + run + "." + agent, // untagged
		bus.ResultSubject(DefaultPrefix, run, agent, resultTag(other, 1)),
		bus.ResultSubject(DefaultPrefix, run, agent, hex.EncodeToString(make([]byte, 16))),
		bus.ResultSubject(DefaultPrefix, run, agent, unsignedTag),
		bus.ResultSubject(DefaultPrefix, run, agent, resultTag(secret, 1)) + ".more",
	} {
		h := newDelivery(other, agent, "n1", 1).sign(nats.Header{jetstream.MsgIDHeader: []string{fmt.Sprintf("forged-%d", i)}}, forged)
		if _, err := js.PublishMsg(t.Context(), &nats.Msg{Subject: subj, Data: forged, Header: h}); err != nil {
			t.Fatalf("forgery on %s: %v", subj, err)
		}
		stored++
	}
	h := newDelivery(secret, agent, "n1", 1).sign(nats.Header{jetstream.MsgIDHeader: []string{"forged-real"}}, forged)
	if _, err := js.PublishMsg(t.Context(), &nats.Msg{Subject: real, Data: forged, Header: h}); err == nil {
		t.Error("a forgery on the real result's subject was stored")
	}
	after, err := s.GetLastMsgForSubject(t.Context(), real)
	if err != nil || after.Sequence != before.Sequence || strings.Contains(string(after.Data), "forged") {
		if err == nil {
			t.Fatalf("the real result was replaced: message %d (was %d): %s", after.Sequence, before.Sequence, after.Data)
		}
		t.Fatalf("the real result is gone: %v", err)
	}
	return stored
}

// Forged results published after the real one, on the task's untagged
// subject, on guessed subjects and on the real one, do not make the real
// result vanish: the run gets it.
func TestForgedResultsAfterTheRealOneDoNotReplaceIt(t *testing.T) {
	s := natsServer(t)
	srv := fanoutScript(1, false)
	defer srv.Close()
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: "ra",
		Placement: map[string]string{"explore": PlaceRemote}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	if err := remote.ServeBudget(budgetActor(t, "ra", budget.Limits{Tokens: 1_000_000})); err != nil {
		t.Fatal(err)
	}
	child, err := remote.Placer().Place(t.Context(), actors.ChildTask{V: 1, Run: "ra", ID: "explore-1", Parent: "root",
		Kind: "explore", Task: "q0: where is main?", Model: "small"})
	if err != nil {
		t.Fatal(err)
	}
	secret := child.(*remoteChild).secret
	done := make(chan actors.AgentResult, 1)
	go func() { r, _ := child.Start(t.Context()); done <- r }()
	n := startNode(t, s, srv, "n1", 1, nil)
	checkFor(t, 30*time.Second, func() error {
		if st := n.Stats(); st.Completed != 1 {
			return fmt.Errorf("node stats %+v", st)
		}
		return nil
	})
	stored := forgeAfter(t, js, "ra", "explore-1", secret)
	res := <-done
	if res.Status != actors.StatusCompleted || strings.Contains(res.Text, "forged") || !strings.Contains(res.Text, "main.go:3") {
		t.Fatalf("result %+v", res)
	}
	checkFor(t, 10*time.Second, func() error {
		// The run read every forgery that was stored and took none.
		if st := remote.Stats(); st.Forged+st.Duplicates != uint64(stored) {
			return fmt.Errorf("stats %+v, want %d refused", st, stored)
		}
		return nil
	})
}

// A resumed run takes up the real result a node stored while the run was
// down, though forgeries were published after it on the task's untagged
// subject, on guessed subjects and on the real one.
func TestResumeFindsTheRealResultAmongForgeries(t *testing.T) {
	s := natsServer(t)
	srv := fanoutScript(1, false)
	defer srv.Close()
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	conn := wrap(t, nc)
	recs := filepath.Join(t.TempDir(), "remote", "rs.tasks.jsonl")
	start := func() *Remote {
		r, err := StartRemote(t.Context(), RemoteOptions{Bus: conn, Run: "rs", Placement: map[string]string{"explore": PlaceRemote},
			Records: recs, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	task := actors.ChildTask{V: messages.ProtocolVersion, Run: "rs", ID: "explore-1", Parent: "root", Kind: "explore",
		Task: "q0: where is main?", Model: "small"}
	first := start()
	c, err := first.Placer().Place(t.Context(), task)
	if err != nil {
		t.Fatal(err)
	}
	secret := c.(*remoteChild).secret
	ended := make(chan struct{})
	go func() { _, _ = c.Start(context.Background()); close(ended) }()
	checkFor(t, 10*time.Second, func() error {
		if c.(*remoteChild).queued() == 0 {
			return fmt.Errorf("not queued yet")
		}
		return nil
	})
	first.Close() // the orchestrator is down; its task stays queued
	<-ended
	// The run's budget is served elsewhere meanwhile (a node's agent calls
	// no model without it); a node runs the task and stores its result.
	bs, err := StartBudgetServer(conn, "rs", budgetActor(t, "rs", budget.Limits{Tokens: 1_000_000}), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	n := startNode(t, s, srv, "n1", 1, nil)
	checkFor(t, 30*time.Second, func() error {
		if st := n.Stats(); st.Completed != 1 {
			return fmt.Errorf("node stats %+v", st)
		}
		return nil
	})
	bs.Close()
	forgeAfter(t, js, "rs", "explore-1", secret)

	second := start()
	defer second.Close()
	c2, err := second.Placer().Place(t.Context(), task)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c2.Start(t.Context())
	if err != nil || got.Status != actors.StatusCompleted || strings.Contains(got.Text, "forged") || !strings.Contains(got.Text, "main.go:3") {
		t.Fatalf("taken up: %+v %v", got, err)
	}
	if st := second.Stats(); st.Reattached != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// A result on the untagged subject of an older troupe that proves the
// task's delivery (a node of an older troupe ran it) fails the task with
// a sentence saying so, rather than leaving it waiting for ever.
func TestUntaggedResultOfAnOlderNodeFailsTheTask(t *testing.T) {
	s := natsServer(t)
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: "ro", Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	d := waitingTask(remote, "explore-1", "n1")
	remote.mu.Lock()
	c := remote.waiting["explore-1"]
	remote.mu.Unlock()
	b, _ := json.Marshal(messages.Result{V: messages.ProtocolVersion, Run: "ro", Agent: "explore-1", Kind: "explore", Node: "n1",
		Attempt: 1, Status: "completed", Reason: "finished", Text: "from an old node"})
	if _, err := js.PublishMsg(t.Context(), &nats.Msg{Subject: "troupe.result.ro.explore-1", Data: b, Header: d.sign(nil, b)}); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-c.done:
		if res.Status != actors.StatusFailed || !strings.Contains(res.Err, "older troupe") || !strings.Contains(res.Err, "upgrade the node") {
			t.Fatalf("result %+v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the task still waits")
	}
	if st := remote.Stats(); st.Forged != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestResultTag(t *testing.T) {
	a, b := newSecret(), newSecret()
	tags := map[string]bool{}
	for _, s := range []string{a, b} {
		for attempt := 1; attempt <= 3; attempt++ {
			tag := resultTag(s, attempt)
			if len(tag) != 32 || bus.CheckToken("tag", tag) != nil || tags[tag] || tag != resultTag(s, attempt) {
				t.Fatalf("tag %q of attempt %d", tag, attempt)
			}
			tags[tag] = true
		}
	}
	if resultTag("", 1) != unsignedTag {
		t.Fatal("a task without a secret")
	}
}

// A node given a task again (attempt 2) acks it without running it when
// the result of attempt 1 is stored on that attempt's subject, proven;
// forgeries (unproven on that subject, proven under another secret on
// another) do not count, and that task runs.
func TestRedeliveredTaskFindsItsStoredResult(t *testing.T) {
	s := natsServer(t)
	srv := fanoutScript(1, false)
	defer srv.Close()
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	conn := wrap(t, nc)
	if err := conn.EnsureStreams(t.Context(), bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	bs, err := StartBudgetServer(conn, "rx", budgetActor(t, "rx", budget.Limits{Tokens: 1_000_000}), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	// The nodes' consumer, as a node makes it: the test takes each task
	// once and hands it back, so the node gets it on attempt 2.
	cons, err := js.CreateOrUpdateConsumer(t.Context(), conn.Names().Tasks, jetstream.ConsumerConfig{
		Durable: consumerName(DefaultPrefix, "explore", messages.ProtocolVersion), FilterSubject: TaskSubject(DefaultPrefix, "explore", messages.ProtocolVersion),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 5 * time.Second, MaxDeliver: 3, MaxAckPending: -1})
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{"explore-done": newSecret(), "explore-forged": newSecret()}
	for id, secret := range secrets {
		b, _ := jsonTask(messages.Task{V: messages.ProtocolVersion, Run: "rx", ID: id, Parent: "root", Kind: "explore",
			Task: "q0: where is main?", Model: "small", Secret: secret})
		if _, err := js.Publish(t.Context(), TaskSubject(DefaultPrefix, "explore", messages.ProtocolVersion), b); err != nil {
			t.Fatal(err)
		}
	}
	batch, err := cons.Fetch(2, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	taken := 0
	for m := range batch.Messages() {
		taken++
		if err := m.Nak(); err != nil {
			t.Fatal(err)
		}
	}
	if taken != 2 {
		t.Fatalf("took %d tasks", taken)
	}
	// explore-done's first attempt stored its result (and died before
	// acking); explore-forged has only forgeries.
	publishSignedResult(t, js, "rx", "explore-done", newDelivery(secrets["explore-done"], "explore-done", "n0", 1), "n0", 1, "stored answer")
	forged, _ := json.Marshal(messages.Result{V: messages.ProtocolVersion, Run: "rx", Agent: "explore-forged", Kind: "explore",
		Node: "n0", Attempt: 1, Status: "completed", Reason: "finished", Text: "forged"})
	if _, err := js.PublishMsg(t.Context(), &nats.Msg{Data: forged,
		Subject: bus.ResultSubject(DefaultPrefix, "rx", "explore-forged", resultTag(secrets["explore-forged"], 1))}); err != nil {
		t.Fatal(err)
	}
	publishSignedResult(t, js, "rx", "explore-forged", newDelivery(newSecret(), "explore-forged", "n0", 1), "n0", 1, "forged, proven under another secret")

	n := startNode(t, s, srv, "n1", 2, nil)
	checkFor(t, 30*time.Second, func() error {
		if st := n.Stats(); st.Redelivered != 2 || st.AlreadyDone != 1 || st.Taken != 1 || st.Completed != 1 {
			return fmt.Errorf("node stats %+v", st)
		}
		return nil
	})
	m, err := storedResultOf(t, conn, "explore-forged", secrets["explore-forged"], 2)
	if err != nil || !strings.Contains(string(m.Data), "main.go:3") {
		t.Fatalf("explore-forged's attempt 2: %v %v", m, err)
	}
}

// storedResultOf is the stored result of rx's task agent at attempt.
func storedResultOf(t *testing.T, conn *bus.Conn, agent, secret string, attempt int) (*jetstream.RawStreamMsg, error) {
	s, err := conn.JetStream().Stream(t.Context(), conn.Names().Results)
	if err != nil {
		return nil, err
	}
	return s.GetLastMsgForSubject(t.Context(), bus.ResultSubject(DefaultPrefix, "rx", agent, resultTag(secret, attempt)))
}
