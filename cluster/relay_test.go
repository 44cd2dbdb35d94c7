package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// forgedEvents is how many forged events each attempt of the forger
// sends: the figure of issue 29 (205 llm.response events for made-up
// runs took every per-run metric label, added $4.50 to the cost and put
// 205 runs in the web view).
const forgedEvents = 205

// leadScript: the root delegates a lead (placed on a node), which
// delegates an explore agent on its node and ends once gate is closed.
func leadScript(gate chan struct{}) *llmtest.Server {
	return llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"lead","task":"lead"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "lead"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"find main"}`)}}},
			{Dynamic: func(llmtest.Recorded) llmtest.Turn { <-gate; return llmtest.Turn{Text: "led"} }}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"func main"}`)}}},
			{Text: "main.go:3"}}},
	}})
}

// forgedEvent is a well-formed llm.response of $4.50/205 about agent of
// run, emitted (it says) on node.
func forgedEvent(t *testing.T, run, agent, node string, seq uint64) messages.Event {
	t.Helper()
	ev, err := messages.NewEvent(run, agent, messages.EvtLLMResponse, seq, messages.LLMResponse{Round: 1, Model: "big",
		TokensIn: 50_000, TokensOut: 2_000, CostUSD: 4.5 / forgedEvents, CostKnown: true, FinishReason: "stop"})
	if err != nil {
		t.Fatal(err)
	}
	ev.Kind, ev.Node = "explore", node
	return ev
}

// batchOf is a batch of evs: their JSON, one per line.
func batchOf(evs ...messages.Event) []byte {
	var b []byte
	for _, ev := range evs {
		line, _ := json.Marshal(ev)
		b = append(append(b, line...), '\n')
	}
	return b
}

// storedRunEvents reads every event the stream holds, from the start.
func storedRunEvents(t *testing.T, c *bus.Conn) []messages.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	es, err := c.Events(ctx, bus.WatchOptions{FromStart: true})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Stop()
	var out []messages.Event
	for {
		select {
		case d := <-es.C:
			out = append(out, d.Event)
			if d.Pending == 0 {
				return out
			}
		case <-ctx.Done():
			t.Fatalf("read the stream: %v (%d events)", ctx.Err(), len(out))
		}
	}
}

// A run's node-placed lead delegates an explore agent on its node; their
// events reach the events stream through the run's requester. Meanwhile a
// forger holding node credentials (another node) tries every way in:
// events for 205 made-up runs and for the real run published on the
// events subjects (the server refuses them), relayed for made-up runs
// (no requester answers), relayed for the real run's task without its
// delivery's proof, and relayed under the real delivery's proof but about
// another run, another node, the run itself or an agent the task did not
// start. None of them reaches the stream; the run counts what it refused,
// and the honest node's events all arrive.
func TestForgedEventsNeverReachTheStream(t *testing.T) {
	an := startAuthNATS(t)
	conn := an.conn(t)
	requester, watcher := conn(bus.RoleRequester), conn(bus.RoleWatcher)
	pub, err := requester.NewPublisher(bus.PublisherOptions{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	srv := leadScript(gate)
	defer srv.Close()
	settings := actors.Settings{MaxDepth: 2, PlanFirst: map[string]bool{"root": false, "lead": false}}
	n1, err := StartNode(t.Context(), NodeOptions{Bus: conn(bus.RoleNode), ID: "n1", Kinds: []string{"lead"}, Slots: 1,
		Agent: actors.Options{Workspace: workspace(t), Client: modelClient(t, srv), Models: actors.Models{Default: "big"},
			Kinds: leadKinds(), Settings: settings, Log: zerolog.Nop()}, AckWait: 5 * time.Second, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n1.Drain(context.Background()) })
	const run = "ra"
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: requester, Run: run, Placement: map[string]string{"lead": PlaceRemote},
		Relay: pub, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	done := make(chan actors.Result, 1)
	go func() {
		res, err := actors.Run(t.Context(), actors.Options{Run: run, Workspace: workspace(t), Task: "t", Client: modelClient(t, srv),
			Models: actors.Models{Default: "big"}, Kinds: leadKinds(), Placer: remote.Placer(), OnBudget: remote.ServeBudget,
			Settings: settings, Events: pub, Log: zerolog.Nop()})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	// The lead holds its task (attempt 1 on n1) and its explore agent has ended.
	var lead *remoteChild
	checkFor(t, 30*time.Second, func() error {
		remote.mu.Lock()
		for _, c := range remote.waiting {
			lead = c
		}
		remote.mu.Unlock()
		if lead == nil || lead.holder() != "n1" || len(requestsOfKind(srv, "explore")) < 2 {
			return errors.New("the lead has not started, or its explore agent not ended")
		}
		return nil
	})

	refused := forge(t, an, run, lead)
	close(gate)
	res := <-done
	if res.Status != actors.StatusCompleted {
		t.Fatalf("run %+v", res.AgentResult)
	}
	if err := pub.Close(t.Context()); err != nil || pub.Dropped() != 0 {
		t.Fatalf("the requester's publisher: %v, %d dropped", err, pub.Dropped())
	}
	stored := storedRunEvents(t, watcher)
	var fromNode, explore int
	var nodeSeqs []uint64
	for _, ev := range stored {
		if ev.Run == run && ev.Kind == "node" && ev.Agent == "n1" {
			nodeSeqs = append(nodeSeqs, ev.Seq)
			continue // the test's, relayed under n1's proof
		}
		if ev.Run == NodesRun && ev.Agent == "n1" && ev.Type == messages.EvtNodeJoined {
			continue // the node's own, which it publishes itself
		}
		if ev.Run != run || ev.Node == "n2" || strings.Contains(string(ev.Data), "forged") || ev.Agent == "explore-zzz" ||
			ev.Type == messages.EvtLLMResponse && strings.Contains(string(ev.Data), `"tokens_in":50000`) {
			t.Errorf("a forged event reached the stream: %+v", ev)
		}
		if ev.Node == "n1" {
			fromNode++
			if ev.Kind == actors.KindExplore && ev.Type == messages.EvtAgentFinished {
				explore++
			}
		}
	}
	if fmt.Sprint(nodeSeqs) != "[1 2 3]" {
		t.Errorf("the node's own events were stored with seqs %v, want [1 2 3]", nodeSeqs)
	}
	if fromNode < 10 || explore != 1 {
		t.Errorf("the honest node's events did not all arrive: %d from n1, %d explore agent.finished", fromNode, explore)
	}
	if got := remote.Stats().Events; got != uint64(refused) {
		t.Errorf("the run counted %d events refused, want %d", got, refused)
	}
	if st := n1.Stats(); st.EventsRelayed != uint64(fromNode) || st.EventsDropped != 0 || st.EventsRefused != 0 {
		t.Errorf("node n1: %d relayed (%d in the stream), %d dropped, %d refused", st.EventsRelayed, fromNode, st.EventsDropped, st.EventsRefused)
	}
}

// forge is the forger's every attempt while lead holds its task; it
// returns how many events the run should have refused.
func forge(t *testing.T, an authNATS, run string, lead *remoteChild) int {
	t.Helper()
	var mu sync.Mutex
	violations := 0
	// Node n2's own credentials, with its private inbox: the only one
	// where the server lets it hear the answers to its requests.
	creds, err := os.ReadFile(an.other)
	if err != nil {
		t.Fatal(err)
	}
	id, err := bus.ParseCreds(creds)
	if err != nil || id.Node != "n2" || id.Inbox() == "" {
		t.Fatalf("the forger's credentials: %+v, %v", id, err)
	}
	nc, err := nats.Connect(an.url, nats.UserCredentials(an.other), nats.CustomInboxPrefix(id.Inbox()), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			mu.Lock()
			violations++
			mu.Unlock()
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	p, task := DefaultPrefix, lead.task.ID
	// On the events subjects: made-up runs, and the real run's lead.
	for i := range forgedEvents {
		for _, ev := range []messages.Event{forgedEvent(t, fmt.Sprintf("forged-%03d", i), "explore-1", "n2", 1), forgedEvent(t, run, task, "n2", uint64(1000+i))} {
			b, _ := json.Marshal(ev)
			if err := nc.Publish(bus.EventSubject(p, ev.Run, ev.Agent, ev.Type), b); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Relayed for made-up runs: nobody answers.
	for i := range forgedEvents {
		ev := forgedEvent(t, fmt.Sprintf("forged-%03d", i), "explore-1", "n2", 1)
		if _, err := nc.Request(bus.CtlSubject(p, ev.Run, ev.Agent, ctlEvents), batchOf(ev), 5*time.Second); !errors.Is(err, nats.ErrNoResponders) {
			t.Errorf("a relay for made-up run %s: %v, want no responders", ev.Run, err)
		}
	}
	refused := 0
	// Relayed for the real lead, as node n2, without the task's secret.
	var evs []messages.Event
	for i := range forgedEvents {
		evs = append(evs, forgedEvent(t, run, task, "n2", uint64(2000+i)))
	}
	b := batchOf(evs...)
	fake := newDelivery(newSecret(), task, "n2", 2)
	m, err := nc.RequestMsg(&nats.Msg{Subject: bus.CtlSubject(p, run, task, ctlEvents), Data: b, Header: fake.sign(nil, b)}, 5*time.Second)
	if rep, derr := decodeReply(m, err); derr != nil || rep.Error == nil || rep.Refused != forgedEvents || rep.Accepted != 0 {
		t.Errorf("a batch without the delivery's proof: %+v, %v", rep, derr)
	}
	refused += forgedEvents
	// Under the real delivery's proof, about what that delivery may not
	// speak for.
	lead.mu.Lock()
	real := newDelivery(lead.secret, task, "n1", lead.attempt)
	lead.mu.Unlock()
	other := forgedEvent(t, "forged-run", task, "n1", 3000)
	elsewhere := forgedEvent(t, run, task, "n2", 3001)
	stranger := forgedEvent(t, run, "explore-zzz", "n1", 1)
	root := forgedEvent(t, run, actors.RootAgentID, "n1", 3002)
	finished, _ := messages.NewEvent(run, task, messages.EvtRunFinished, 3003, map[string]string{"status": "forged"})
	finished.Node = "n1"
	b = batchOf(other, elsewhere, stranger, root, finished)
	m, err = nc.RequestMsg(&nats.Msg{Subject: bus.CtlSubject(p, run, task, ctlEvents), Data: b, Header: real.sign(nil, b)}, 5*time.Second)
	if rep, derr := decodeReply(m, err); derr != nil || rep.Error != nil || rep.Refused != 5 || rep.Accepted != 0 {
		t.Errorf("a proven batch of events its delivery may not speak for: %+v, %v", rep, derr)
	}
	refused += 5
	// The node's own events (task.redelivered) are numbered by the node
	// across the relays of all its tasks, so they may arrive out of
	// order (here 9 before 4): the run numbers them as it publishes them.
	var own []messages.Event
	for _, seq := range []uint64{9, 4} {
		ev, err := messages.NewEvent(run, "n1", messages.EvtTaskRedelivered, seq, messages.TaskRedelivered{Agent: task, Kind: "lead", Attempt: 2, Node: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		ev.Kind, ev.Node = "node", "n1"
		own = append(own, ev)
	}
	b = batchOf(own...)
	m, err = nc.RequestMsg(&nats.Msg{Subject: bus.CtlSubject(p, run, task, ctlEvents), Data: b, Header: real.sign(nil, b)}, 5*time.Second)
	if rep, derr := decodeReply(m, err); derr != nil || rep.Error != nil || rep.Accepted != 2 {
		t.Errorf("a proven batch of the node's own events: %+v, %v", rep, derr)
	}
	// The same batch again (its answer lost on the way), then a third
	// event: the events sent again keep their numbers, so the third is 3.
	third, err := messages.NewEvent(run, "n1", messages.EvtTaskRedelivered, 10, messages.TaskRedelivered{Agent: task, Kind: "lead", Attempt: 3, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	third.Kind, third.Node = "node", "n1"
	for _, b := range [][]byte{b, batchOf(third)} {
		m, err = nc.RequestMsg(&nats.Msg{Subject: bus.CtlSubject(p, run, task, ctlEvents), Data: b, Header: real.sign(nil, b)}, 5*time.Second)
		if rep, derr := decodeReply(m, err); derr != nil || rep.Error != nil || rep.Accepted == 0 {
			t.Errorf("a proven batch of the node's own events: %+v, %v", rep, derr)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if violations != 2*forgedEvents {
			return fmt.Errorf("%d permission violations, want %d", violations, 2*forgedEvents)
		}
		return nil
	})
	return refused
}

func decodeReply(m *nats.Msg, err error) (messages.EventBatchReply, error) {
	if err != nil {
		return messages.EventBatchReply{}, err
	}
	return messages.Decode[messages.EventBatchReply](m.Data, relayReplyBytes)
}

// When a run's requester is gone (here its remote side closed, as a killed
// orchestrator's is), a node running one of its tasks drops the task's
// events with a count instead of holding them or blocking its agent: no
// requester answers, the relay says so once, and the task still ends.
func TestNodeDropsTheEventsOfAGoneRequester(t *testing.T) {
	s := natsServer(t)
	gate := make(chan struct{})
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"find main"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{
			{Dynamic: func(llmtest.Recorded) llmtest.Turn {
				<-gate
				return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"func main"}`)}}}
			}},
			{Text: "main.go:3"}}},
	}})
	defer srv.Close()
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	n1, err := StartNode(t.Context(), NodeOptions{Bus: wrap(t, connect(t, s)), ID: "n1", Kinds: []string{"explore"}, Slots: 1,
		Agent:   actors.Options{Workspace: workspace(t), Client: modelClient(t, srv), Models: actors.Models{Default: "big"}, Log: zerolog.Nop()},
		AckWait: 5 * time.Second, BudgetTimeout: time.Second, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n1.Drain(context.Background()) })
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, connect(t, s)), Run: "rg", Placement: map[string]string{"explore": PlaceRemote},
		Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = actors.Run(t.Context(), actors.Options{Run: "rg", Workspace: workspace(t), Task: "t", Client: modelClient(t, srv),
			Models: actors.Models{Default: "big"}, Placer: remote.Placer(), OnBudget: remote.ServeBudget,
			Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}}, Log: zerolog.Nop()})
	}()
	checkFor(t, 30*time.Second, func() error {
		if st := n1.Stats(); st.Taken != 1 || st.EventsRelayed == 0 {
			return fmt.Errorf("the task has not started, or its first events not reached the requester: %+v", st)
		}
		return nil
	})
	remote.Close() // the requester is gone
	<-done
	close(gate)
	checkFor(t, 30*time.Second, func() error {
		if st := n1.Stats(); st.Completed != 1 || st.EventsDropped == 0 {
			return fmt.Errorf("the task has not ended, or its events not been dropped: %+v", st)
		}
		return nil
	})
	if st := n1.Stats(); st.EventsRefused != 0 {
		t.Errorf("events refused, want dropped: %+v", st)
	}
}
