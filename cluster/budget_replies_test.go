package cluster

import (
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// A budget request sent again under its ID (its reply lost with a
// server) is answered with the reply it got the first time, and done
// once: a usage charged twice would spend the run's budget on nothing.
// The same ID with other content is another request.
func TestBudgetRequestAnsweredOnce(t *testing.T) {
	s := natsServer(t)
	local := budgetActor(t, "r9", budget.Limits{Tokens: 10_000})
	srv, err := StartBudgetServer(wrap(t, connect(t, s)), "r9", local, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := local.Acquire(t.Context(), budget.Acquire{Agent: "root", Kind: "root", Estimate: 5000}, nil); err != nil {
		t.Fatal(err)
	}
	nc := connect(t, s)
	ask := func(id string, tokens int64) messages.BudgetReportReply {
		t.Helper()
		b, _ := json.Marshal(messages.BudgetReport{V: messages.ProtocolVersion, Agent: "root", Tokens: tokens})
		m, err := nc.RequestMsg(&nats.Msg{Subject: bus.BudgetSubject(DefaultPrefix, "r9", opUsage), Data: b,
			Header: nats.Header{budgetRequestHeader: []string{id}}}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var r messages.BudgetReportReply
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := ask("req-1", 100)
	again := ask("req-1", 100)
	if first.Used != 100 || again.Used != 100 {
		t.Fatalf("a usage sent twice under one ID: used %d, then %d; want 100 both times", first.Used, again.Used)
	}
	if other := ask("req-1", 50); other.Used != 150 {
		t.Errorf("other content under a used ID: used %d, want 150", other.Used)
	}
	if fresh := ask("req-2", 100); fresh.Used != 250 {
		t.Errorf("a new request: used %d, want 250", fresh.Used)
	}
	snap, err := local.Snapshot(t.Context())
	if err != nil || snap.Used.Tokens != 250 {
		t.Fatalf("the budget charged %d tokens (%v), want 250", snap.Used.Tokens, err)
	}
}

// The replies remembered are bounded: answered ones go after
// repliesKeep, and beyond repliesMax the oldest go; one still being
// answered (an acquire waiting its turn) stays until it is answered.
func TestBudgetRepliesBounded(t *testing.T) {
	r := newReplies()
	msg := func(i int) *nats.Msg {
		id := strconv.Itoa(i)
		return &nats.Msg{Subject: "s", Data: []byte(id), Header: nats.Header{budgetRequestHeader: []string{id}}}
	}
	if !r.admit(msg(0)) { // never answered
		t.Fatal("a first request was not admitted")
	}
	for i := 1; i <= 10; i++ {
		if m := msg(i); r.admit(m) {
			_ = r.answer(m, []byte("ok"))
		}
	}
	r.mu.Lock()
	r.forget(time.Now().Add(repliesKeep + time.Second))
	r.mu.Unlock()
	if n := r.size(); n != 1 {
		t.Errorf("after their time %d replies remembered, want only the one being answered", n)
	}
	for i := 11; i < repliesMax+100; i++ {
		if m := msg(i); r.admit(m) {
			_ = r.answer(m, []byte("ok"))
		}
	}
	if n := r.size(); n > repliesMax+1 {
		t.Errorf("%d replies remembered, want at most %d", n, repliesMax+1)
	}
}

// A budget request whose reply does not come (lost with a server) is
// asked again under the same ID after budgetTry, and its answer taken:
// here the budget's side drops the first copy unanswered.
func TestBudgetClientAsksAgain(t *testing.T) {
	s := natsServer(t)
	server := connect(t, s)
	var mu sync.Mutex
	var ids []string
	sub, err := server.Subscribe(bus.BudgetSubject(DefaultPrefix, "r8", opUsage), func(m *nats.Msg) {
		mu.Lock()
		ids = append(ids, m.Header.Get(budgetRequestHeader))
		first := len(ids) == 1
		mu.Unlock()
		if first {
			return // lost
		}
		b, _ := json.Marshal(messages.BudgetReportReply{V: 1, Used: 7})
		_ = m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := server.Flush(); err != nil {
		t.Fatal(err)
	}
	client := NewBudgetClient(connect(t, s), DefaultPrefix, "r8", "")
	rep, err := client.Usage(t.Context(), budget.Usage{Agent: "a", Tokens: 7})
	if err != nil || rep.Used != 7 {
		t.Fatalf("usage after a lost reply: %+v %v", rep, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 2 || ids[0] == "" || ids[0] != ids[1] {
		t.Errorf("request IDs of the tries: %q, want two of the same", ids)
	}
}
