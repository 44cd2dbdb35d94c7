package cluster

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// What a killed attempt spent stays spent: its node reported the tokens
// of its first model call and died in its second; the task is redelivered
// to another node, whose attempt reports its own and releases the lease.
// The run's budget counts both attempts' tokens for the agent.
func TestDeadAttemptUsageCounted(t *testing.T) {
	s := natsServer(t)
	srv := blockingScript(1, func(_ string, call int) llmtest.Turn {
		switch call {
		case 1: // attempt 1, on the node that dies
			return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"func main"}`)}},
				Usage: &llmtest.Usage{PromptTokens: 700, CompletionTokens: 300}}
		case 2: // attempt 1 again: it never gets an answer
			return llmtest.Turn{Text: "never", Latency: llmtest.Duration(time.Hour)}
		}
		return llmtest.Turn{Text: "main.go:3", Usage: &llmtest.Usage{PromptTokens: 60, CompletionTokens: 40}}
	})
	defer srv.Close()
	o1 := nodeOpts(t, s, srv, "n1")
	o1.AckWait, o1.DrainTimeout = time.Second, 50*time.Millisecond
	n1 := startNodeWith(t, o1)
	run := startTeam(t, s, srv, "ru", nil)
	waitRunning(t, n1, 1)
	explore := func(snap messages.BudgetSnapshot) (messages.BudgetAgent, bool) {
		for _, a := range snap.Agents {
			if a.Kind == "explore" {
				return a, true
			}
		}
		return messages.BudgetAgent{}, false
	}
	// The first attempt's tokens are in the budget, and it waits for its
	// second answer: what it spent is final.
	checkFor(t, 30*time.Second, func() error {
		snap, err := run.team.Budget().Snapshot(t.Context())
		if err != nil {
			return err
		}
		if a, ok := explore(snap); !ok || a.Used.Tokens != 1000 || srv.InFlight() != 1 {
			return fmt.Errorf("explore agent %+v, %d model calls in flight", a, srv.InFlight())
		}
		return nil
	})
	o1.Bus.NATS().Close() // the node dies: no result, no release, no goodbye
	o2 := nodeOpts(t, s, srv, "n2")
	o2.AckWait = time.Second
	n2 := startNodeWith(t, o2)
	res, err := run.wait(t)
	if err != nil || res.Text != "all answered" {
		t.Fatalf("run %+v %v", res, err)
	}
	if st := n2.Stats(); st.Redelivered != 1 || st.Completed != 1 {
		t.Fatalf("second node %+v: want the task redelivered there and completed", st)
	}
	a, ok := explore(*res.Budget)
	if !ok || a.Used.Tokens != 1100 || a.State != messages.BudgetStateReleased {
		t.Errorf("the explore agent's lease %+v: want 1000 tokens of the dead attempt and 100 of the second, released", a)
	}
	if got := res.Budget.ByKind["explore"].Used.Tokens; got != 1100 {
		t.Errorf("explore agents used %d tokens in all, want 1100", got)
	}
}

// A second result for a task already answered (a redelivered attempt's,
// published after JetStream's duplicate window, so the stream keeps it)
// is dropped and counted; within the window the stream drops it itself.
// The parent gets exactly one result, the first.
func TestDuplicateResultDropped(t *testing.T) {
	s := natsServer(t)
	gate := make(chan struct{})
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{{ToolCalls: delegateCalls(2, false)}, {Text: "all answered"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			q := strings.SplitN(req.Task, ":", 2)[0]
			if q == "q1" {
				<-gate // the root waits for this one while the duplicate of q0 comes
			}
			return llmtest.Turn{Text: q + ": main.go:3"}
		}}}},
	}})
	defer srv.Close()
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	o := nodeOpts(t, s, srv, "n1")
	nodeEv := &recorder{}
	o.Events = nodeEv
	startNodeWith(t, o)
	run := startTeam(t, s, srv, "rdup", nil)

	// q0's result has reached its parent; q1 still runs.
	var q0 string
	checkFor(t, 30*time.Second, func() error {
		for _, ev := range nodeEv.events() {
			if st, err := messages.DecodeAs[messages.AgentStarted](ev); err == nil && ev.Type == messages.EvtAgentStarted && strings.HasPrefix(st.Task, "q0:") {
				q0 = ev.Agent
			}
		}
		if q0 == "" {
			return fmt.Errorf("q0 not started")
		}
		run.remote.mu.Lock()
		_, waiting := run.remote.waiting[q0]
		run.remote.mu.Unlock()
		if waiting {
			return fmt.Errorf("the result of %s not taken yet", q0)
		}
		return nil
	})
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	dup, _ := json.Marshal(actors.AgentResult{Agent: q0, Kind: "explore", Status: actors.StatusCompleted,
		Text: "DUPLICATE from a redelivered attempt"}.Wire("rdup", "n2", 2))
	publish := func(msgID string) *jetstream.PubAck {
		ack, err := js.PublishMsg(t.Context(), &nats.Msg{Subject: bus.ResultSubject(DefaultPrefix, "rdup", q0, resultTag(newSecret(), 2)), Data: dup,
			Header: nats.Header{jetstream.MsgIDHeader: []string{msgID}}})
		if err != nil {
			t.Fatal(err)
		}
		return ack
	}
	// Within the window: the message ID the node gave the task's result
	// (of the first delivery: its tag), so the stream drops it.
	results, err := js.Stream(t.Context(), bus.ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := results.Info(t.Context(), jetstream.WithSubjectFilter(bus.ResultSubject(DefaultPrefix, "rdup", q0, "*")))
	if err != nil || len(info.State.Subjects) != 1 {
		t.Fatalf("the results of %s: %v %v", q0, info, err)
	}
	firstID := ""
	for subj := range info.State.Subjects {
		m, err := results.GetLastMsgForSubject(t.Context(), subj)
		if err != nil {
			t.Fatal(err)
		}
		firstID = m.Header.Get(jetstream.MsgIDHeader)
	}
	if !strings.HasPrefix(firstID, "rdup."+q0+".result.") {
		t.Fatalf("the first result's message ID %q", firstID)
	}
	if ack := publish(firstID); !ack.Duplicate {
		t.Errorf("the stream stored a second result with the task's message ID: %+v", ack)
	}
	// Past the window (another ID stands for it): stored, and dropped by
	// the orchestrator. Results are consumed in order, so had the first
	// one been stored it would be counted by now too.
	publish("rdup." + q0 + ".result.late")
	checkFor(t, 10*time.Second, func() error {
		if st := run.remote.Stats(); st.Duplicates != 1 {
			return fmt.Errorf("remote stats %+v", st)
		}
		return nil
	})
	close(gate)
	res, err := run.wait(t)
	if err != nil || res.Text != "all answered" {
		t.Fatalf("run %+v %v", res, err)
	}
	got := rootToolResults(srv)
	var q0s []string
	for _, r := range got {
		if strings.Contains(r, q0) || strings.Contains(r, "q0:") || strings.Contains(r, "DUPLICATE") {
			q0s = append(q0s, r)
		}
	}
	if len(got) != 2 || len(q0s) != 1 || !strings.Contains(q0s[0], "q0: main.go:3") || strings.Contains(q0s[0], "DUPLICATE") {
		t.Errorf("the root got %d results, %d of them q0's: %q", len(got), len(q0s), got)
	}
	if st := run.remote.Stats(); st != (RemoteStats{Duplicates: 1}) {
		t.Errorf("remote stats %+v, want one duplicate", st)
	}
}
