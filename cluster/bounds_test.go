package cluster

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// Cancels are forgotten after cancelKeep, and at most cancelMax are
// remembered, so a node that runs for weeks keeps a bounded memory.
func TestCancelMemoryIsBounded(t *testing.T) {
	c := newCancelMemory()
	start := time.Now()
	for i := range cancelMax + 50 {
		c.addAt(fmt.Sprintf("run%d", i), start)
	}
	if n := c.size(); n != cancelMax {
		t.Fatalf("%d cancels remembered, want %d", n, cancelMax)
	}
	if c.has("run0", "a") || !c.has(fmt.Sprintf("run%d", cancelMax+49), "a") {
		t.Fatal("the oldest cancels should go first")
	}
	c.addAt("late", start.Add(cancelKeep+time.Minute))
	if n := c.size(); n != 1 {
		t.Fatalf("%d cancels remembered after they aged, want 1", n)
	}
	if len(c.order)-c.head != 1 {
		t.Fatalf("the queue holds %d entries", len(c.order)-c.head)
	}
}

// A node's per-run event numbering forgets runs idle for nodeSeqKeep.
func TestNodeEventsForgetIdleRuns(t *testing.T) {
	e := newNodeEvents(&recorder{}, "n1", zerolog.Nop())
	start := time.Now()
	for i := range 2 * nodeSeqMax {
		e.emitAt(fmt.Sprintf("r%d", i), "n1", "task.redelivered", map[string]string{}, start, nil)
	}
	e.emitAt("last", "n1", "task.redelivered", map[string]string{}, start.Add(nodeSeqKeep+time.Minute), nil)
	if n := e.runs(); n > nodeSeqMax {
		t.Fatalf("%d runs remembered, want at most %d", n, nodeSeqMax)
	}
}

// The budget server answers from a fixed pool: acquires that wait for a
// slot do not add goroutines, nor stop a usage report from being
// answered; a request beyond the queue is answered unavailable at once,
// and Close answers every queued one.
func TestBudgetServerBoundedPool(t *testing.T) {
	s := natsServer(t)
	local := budgetActor(t, "rp", budget.Limits{Tokens: 1 << 40, PerKind: map[string]int{"explore": 1}})
	srv, err := StartBudgetServer(wrap(t, connect(t, s)), "rp", local, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			srv.Close()
		}
	}()
	ctx := t.Context()
	if _, err := local.Acquire(ctx, budget.Acquire{Agent: "root", Kind: "root", Estimate: 1 << 30}, nil); err != nil {
		t.Fatal(err)
	}
	client := NewBudgetClient(connect(t, s), DefaultPrefix, "rp", "")
	if _, err := client.Acquire(ctx, budget.Acquire{Agent: "e0", Parent: "root", Kind: "explore", Estimate: 10}, nil); err != nil {
		t.Fatal(err)
	}
	nc := connect(t, s)
	replies := make(chan *nats.Msg, 4096)
	inbox := nats.NewInbox()
	if _, err := nc.ChanSubscribe(inbox, replies); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	n := budgetAcquireWorkers + budgetQueue + 50
	for i := range n {
		b, _ := json.Marshal(messages.BudgetAcquireRequest{V: messages.ProtocolVersion, Agent: fmt.Sprintf("w%d", i),
			Parent: "root", Kind: "explore", Estimate: 10})
		if err := nc.PublishRequest(bus.BudgetSubject(DefaultPrefix, "rp", messages.BudgetOpAcquire), inbox, b); err != nil {
			t.Fatal(err)
		}
	}
	checkFor(t, 30*time.Second, func() error {
		if srv.Busy() < 50 {
			return fmt.Errorf("%d requests refused as busy", srv.Busy())
		}
		return nil
	})
	if _, err := client.Usage(ctx, budget.Usage{Agent: "e0", Tokens: 1}); err != nil {
		t.Fatalf("a usage report behind %d waiting acquires: %v", n, err)
	}
	if g := runtime.NumGoroutine(); g > before+20 {
		t.Errorf("%d goroutines with %d waiting acquires, %d before", g, n, before)
	}
	srv.Close()
	closed = true
	got := 0
	checkFor(t, 30*time.Second, func() error {
		for len(replies) > 0 {
			<-replies
			got++
		}
		if got < n {
			return fmt.Errorf("%d of %d requests answered", got, n)
		}
		return nil
	})
}

// A task delivered again to the node already running it (its progress
// acks were lost) is recognised: the running copy keeps it, no second
// agent starts, and the running copy settles the latest delivery.
func TestDuplicateDeliveryKeepsRunningCopy(t *testing.T) {
	s := natsServer(t)
	gate := make(chan struct{})
	calls := atomic.Int32{}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true,
		Turns: []llmtest.Turn{{Dynamic: func(llmtest.Recorded) llmtest.Turn {
			calls.Add(1)
			<-gate
			return llmtest.Turn{Text: "main.go:3"}
		}}}}}})
	defer srv.Close()
	n := startNode(t, s, srv, "n1", 2, &recorder{})

	// Two real deliveries of one task, from a stream of the test's own
	// whose consumer redelivers after a second.
	js, err := jetstream.New(connect(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DUP", Subjects: []string{"dup.>"}}); err != nil {
		t.Fatal(err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, "DUP", jetstream.ConsumerConfig{Durable: "dup", AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(messages.Task{V: messages.ProtocolVersion, Run: "rd", ID: "explore-1", Parent: "root", Kind: "explore",
		Task: "where is main?", Model: "small"})
	if _, err := js.Publish(ctx, "dup.task", data); err != nil {
		t.Fatal(err)
	}
	fetch := func() jetstream.Msg {
		t.Helper()
		b, err := cons.Fetch(1, jetstream.FetchMaxWait(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range b.Messages() {
			return m
		}
		t.Fatal("no delivery")
		return nil
	}
	deliver := func(m jetstream.Msg) {
		n.slots <- struct{}{}
		n.tasks.Add(1)
		n.run("explore", m)
	}
	first := fetch()
	done := make(chan struct{})
	go func() { deliver(first); close(done) }()
	checkFor(t, 30*time.Second, func() error {
		if calls.Load() == 0 {
			return fmt.Errorf("the agent has not called its model")
		}
		return nil
	})
	second := fetch() // the consumer redelivers: the first delivery was not acked within its AckWait
	if md, _ := second.Metadata(); md == nil || md.NumDelivered != 2 {
		t.Fatalf("second delivery: %+v", md)
	}
	deliver(second) // returns at once: the running copy keeps it
	if st := n.Stats(); st.Duplicates != 1 || st.Taken != 1 {
		t.Fatalf("stats after the duplicate: %+v", st)
	}
	close(gate)
	<-done
	if c := calls.Load(); c != 1 {
		t.Errorf("%d model calls, want 1 (one agent)", c)
	}
	checkFor(t, 30*time.Second, func() error {
		info, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumAckPending != 0 {
			return fmt.Errorf("%d deliveries not acked", info.NumAckPending)
		}
		return nil
	})
}

// A remote task whose kind no live node serves fails within the placement
// timeout with a sentence naming the kind, and leaves the queue.
func TestRemoteKindWithoutNodesFails(t *testing.T) {
	s := natsServer(t)
	conn := wrap(t, connect(t, s))
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: conn, Run: "rk", PlacementTimeout: time.Second,
		Placement: map[string]string{"worker": PlaceRemote}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	child, err := remote.Placer().Place(t.Context(), actors.ChildTask{V: messages.ProtocolVersion, Run: "rk", ID: "worker-1",
		Parent: "root", Kind: "worker", Task: "edit main.go", Model: "small"})
	if err != nil || child == nil {
		t.Fatalf("place: %v %v", child, err)
	}
	res, err := child.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actors.StatusFailed || !strings.Contains(res.Err, `no live node serves kind "worker"`) {
		t.Fatalf("result: %+v", res)
	}
	if remote.Stats().Unplaced != 1 {
		t.Errorf("stats: %+v", remote.Stats())
	}
	st, err := conn.JetStream().Stream(t.Context(), conn.Names().Tasks)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(t.Context())
	if err != nil || info.State.Msgs != 0 {
		t.Fatalf("the task is still queued: %+v %v", info.State, err)
	}
}
