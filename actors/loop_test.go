package actors_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

const planArgs = `{"summary":"Make A return 2.","steps":[{"title":"Change A in a.go","files":["a.go"],"agent":"worker"}]}`

// Several rounds with parallel tool calls, the plan-to-execute switch, an
// edit, and a final answer: what the model was sent each round, and what
// the run reports.
func TestRoundsWithParallelToolsAndPlanSwitch(t *testing.T) {
	ws := workspace(t, map[string]string{
		"a.go": "package a\n\nfunc A() int { return 1 }\n",
		"b.go": "package a\n\nfunc B() int { return A() }\n",
	})
	srv := llmtest.New(script(kind("root",
		calls(tc("read_file", `{"path":"a.go"}`), tc("read_file", `{"path":"b.go"}`), tc("grep", `{"pattern":"func"}`)),
		calls(tc("submit_plan", planArgs)),
		calls(tc("edit_file", `{"path":"a.go","old_string":"return 1","new_string":"return 2"}`)),
		say("Done: A now returns 2."),
	)))
	defer srv.Close()
	rec := &actors.Recorder{}
	res := run(t, options(t, srv, ws, "make A return 2", rec))

	if res.Status != actors.StatusCompleted || res.Reason != actors.ReasonFinished || res.Text != "Done: A now returns 2." {
		t.Fatalf("result %+v", res.AgentResult)
	}
	if res.Rounds != 4 || res.ToolCalls != 5 {
		t.Errorf("rounds %d tool calls %d", res.Rounds, res.ToolCalls)
	}
	if res.Budget == nil || res.Budget.Used.ToolCalls != 5 || res.Budget.Used.Tokens != int64(res.Usage.Total()) {
		t.Errorf("budget ledger: %+v, want 5 tool calls and %d tokens", res.Budget.Used, res.Usage.Total())
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.go")); !strings.Contains(string(b), "return 2") {
		t.Errorf("edit not applied: %s", b)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	// Planning phase: read-only tools and submit_plan, no edit tools.
	if has(reqs[0].Tools, "edit_file") || has(reqs[0].Tools, "shell") || !has(reqs[0].Tools, "submit_plan") || !has(reqs[0].Tools, "read_file") {
		t.Errorf("planning tools: %s", toolNames(reqs[0]))
	}
	// Execution phase after submit_plan: the full set.
	if !has(reqs[2].Tools, "edit_file") || !has(reqs[2].Tools, "shell") {
		t.Errorf("execution tools: %s", toolNames(reqs[2]))
	}
	// Round 2 carries the assistant's three calls and their three results.
	msgs := reqs[1].Messages
	var asst llmtest.RecordedMessage
	var toolMsgs []llmtest.RecordedMessage
	for _, m := range msgs {
		switch m.Role {
		case "assistant":
			asst = m
		case "tool":
			toolMsgs = append(toolMsgs, m)
		}
	}
	if len(asst.ToolCalls) != 3 || len(toolMsgs) != 3 {
		t.Fatalf("round 2 sent %d calls, %d results", len(asst.ToolCalls), len(toolMsgs))
	}
	for i, m := range toolMsgs {
		if m.ToolCallID != asst.ToolCalls[i].ID {
			t.Errorf("tool result %d answers %q, want %q", i, m.ToolCallID, asst.ToolCalls[i].ID)
		}
	}
	if !strings.Contains(toolMsgs[0].Content, "L3: func A() int { return 1 }") || !strings.Contains(toolMsgs[2].Content, "a.go") {
		t.Errorf("tool results: %q / %q", toolMsgs[0].Content, toolMsgs[2].Content)
	}
	// The execution prompt follows the accepted plan.
	last := reqs[2].Messages[len(reqs[2].Messages)-1]
	if last.Role != "user" || !strings.Contains(last.Content, "Carry out the plan") {
		t.Errorf("no execution prompt after submit_plan: %+v", last)
	}
	evs := rec.Events()
	checkSeqs(t, evs)
	if n := len(rec.OfType(messages.EvtToolStarted)); n != 5 {
		t.Errorf("%d tool.started events", n)
	}
	if ph := rec.OfType(messages.EvtPhaseChanged); len(ph) != 1 || dataOf(t, ph[0])["phase"] != actors.PhaseExecute {
		t.Errorf("phase events %v", ph)
	}
	if len(rec.OfType(messages.EvtRunFinished)) != 1 || len(rec.OfType(messages.EvtAgentFinished)) != 1 {
		t.Error("missing run.finished or agent.finished")
	}
	// A successful run leaves no checkpoints behind.
	if _, err := os.Stat(filepath.Join(stateOf(t, ws), "runs", res.Run)); !os.IsNotExist(err) {
		t.Errorf("checkpoints kept after success: %v", err)
	}
}

func noPlan() actors.Settings {
	return actors.Settings{PlanFirst: map[string]bool{"root": false, "worker": false}}
}

// Transient failures (429 with Retry-After, a stream cut mid-way, a
// malformed chunk) are retried and the run goes on.
func TestTransientModelFailuresAreRetried(t *testing.T) {
	ws := workspace(t, map[string]string{"a.txt": "alpha\n"})
	srv := llmtest.New(script(kind("root",
		llmtest.Turn{Fail: &llmtest.Failure{Kind: llmtest.FailStatus, Status: 429, Message: "slow down", RetryAfter: llmtest.Duration(5 * time.Millisecond)}},
		calls(tc("read_file", `{"path":"a.txt"}`)),
		llmtest.Turn{Fail: &llmtest.Failure{Kind: llmtest.FailDrop, AfterChunks: 2}},
		llmtest.Turn{Fail: &llmtest.Failure{Kind: llmtest.FailMalformed, AfterChunks: 1}},
		say("alpha it is"),
	)))
	defer srv.Close()
	rec := &actors.Recorder{}
	o := options(t, srv, ws, "read a.txt", rec)
	o.Settings = noPlan()
	res := run(t, o)
	if res.Status != actors.StatusCompleted || res.Text != "alpha it is" {
		t.Fatalf("result %+v", res.AgentResult)
	}
	if n := len(srv.Requests()); n != 5 {
		t.Errorf("%d requests, want 5", n)
	}
	resp := rec.OfType(messages.EvtLLMResponse)
	if len(resp) != 2 || dataOf(t, resp[0])["attempts"] != 2.0 || dataOf(t, resp[1])["attempts"] != 3.0 {
		t.Errorf("attempts in llm.response events: %v / %v", dataOf(t, resp[0])["attempts"], dataOf(t, resp[1])["attempts"])
	}
}

// A permanent failure (401) ends the run at once with the provider's words.
func TestPermanentModelFailureReportedAtOnce(t *testing.T) {
	srv := llmtest.New(script(kind("root",
		llmtest.Turn{Fail: &llmtest.Failure{Kind: llmtest.FailStatus, Status: 401, Message: "Incorrect API key provided", Code: "invalid_api_key"}},
	)))
	defer srv.Close()
	rec := &actors.Recorder{}
	res := run(t, options(t, srv, workspace(t, nil), "anything", rec))
	if res.Status != actors.StatusFailed || !strings.Contains(res.Err, "401") || !strings.Contains(res.Err, "Incorrect API key provided") {
		t.Fatalf("result %+v", res.AgentResult)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("401 was retried: %d requests", n)
	}
	if len(rec.OfType(messages.EvtAgentFailed)) != 1 {
		t.Error("no agent.failed event")
	}
}

// The same call three times in a row is refused with a message saying so.
func TestDoomLoopIsBroken(t *testing.T) {
	ws := workspace(t, map[string]string{"a.txt": "alpha\n"})
	same := calls(tc("read_file", `{"path":"a.txt"}`))
	srv := llmtest.New(script(kind("root", same, same, same, say("ok, stopping"))))
	defer srv.Close()
	rec := &actors.Recorder{}
	o := options(t, srv, ws, "read", rec)
	o.Settings = noPlan()
	res := run(t, o)
	if res.Text != "ok, stopping" {
		t.Fatalf("result %+v", res.AgentResult)
	}
	reqs := srv.Requests()
	lastTool := reqs[3].Messages[len(reqs[3].Messages)-1]
	if lastTool.Role != "tool" || !strings.Contains(lastTool.Content, "doom loop") || !strings.Contains(lastTool.Content, "3 times in a row") {
		t.Errorf("third call's result: %+v", lastTool)
	}
	if !strings.HasPrefix(reqs[2].Messages[len(reqs[2].Messages)-1].Content, "L1: alpha") {
		t.Error("the second identical call was refused too early")
	}
	if len(rec.OfType(messages.EvtDoomLoop)) != 1 {
		t.Error("no doom-loop event")
	}
}

// Polling a background job with the same arguments is no doom loop: its
// output changes over time.
func TestPollingIsNoDoomLoop(t *testing.T) {
	ws := workspace(t, map[string]string{"a.txt": "alpha\n"})
	poll := calls(tc("job_output", `{"job_id":"job-9"}`))
	srv := llmtest.New(script(kind("root", poll, poll, poll, poll, say("done polling"))))
	defer srv.Close()
	rec := &actors.Recorder{}
	o := options(t, srv, ws, "poll", rec)
	o.Settings = noPlan()
	if res := run(t, o); res.Text != "done polling" {
		t.Fatalf("result %+v", res.AgentResult)
	}
	for i, r := range srv.Requests()[1:] {
		if last := r.Messages[len(r.Messages)-1]; strings.Contains(last.Content, "doom loop") {
			t.Errorf("poll %d refused: %s", i+1, last.Content)
		}
	}
	if n := len(rec.OfType(messages.EvtDoomLoop)); n != 0 {
		t.Errorf("%d doom-loop events", n)
	}
}

// max_rounds ends the agent with its best text and the reason round_limit.
func TestRoundLimit(t *testing.T) {
	ws := workspace(t, map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n"})
	srv := llmtest.New(script(kind("root",
		llmtest.Turn{Text: "looking at a", ToolCalls: []llmtest.ToolCall{tc("read_file", `{"path":"a.txt"}`)}},
		calls(tc("read_file", `{"path":"b.txt"}`)),
		say("never reached"),
	)))
	defer srv.Close()
	o := options(t, srv, ws, "read", &actors.Recorder{})
	o.Settings = noPlan()
	o.Settings.MaxRounds = 2
	res := run(t, o)
	if res.Reason != actors.ReasonRoundLimit || res.Text != "looking at a" || res.Rounds != 2 {
		t.Fatalf("result %+v", res.AgentResult)
	}
}

// With StreamDeltas the streamed answer reaches the events as llm.delta
// events whose text adds up to the answer, before llm.response; without it
// there are none.
func TestStreamDeltas(t *testing.T) {
	answer := strings.Repeat("The cache is invalidated in store.go. ", 40)
	for _, on := range []bool{true, false} {
		srv := llmtest.New(script(kind("root", llmtest.Turn{Text: answer})))
		rec := &actors.Recorder{}
		o := options(t, srv, workspace(t, nil), "why?", rec)
		o.Settings = noPlan()
		o.StreamDeltas = on
		res := run(t, o)
		srv.Close()
		if res.Text != answer {
			t.Fatalf("answer %q", res.Text)
		}
		var text strings.Builder
		deltaAfterResponse := false
		seenResponse := false
		for _, ev := range rec.Events() {
			switch ev.Type {
			case messages.EvtLLMResponse:
				seenResponse = true
			case messages.EvtLLMDelta:
				d, err := messages.DecodeAs[messages.LLMDelta](ev)
				if err != nil {
					t.Fatal(err)
				}
				text.WriteString(d.Text)
				deltaAfterResponse = deltaAfterResponse || seenResponse
			}
		}
		if on && (text.String() != answer || deltaAfterResponse) {
			t.Errorf("deltas: %d of %d bytes, a delta after llm.response: %v", text.Len(), len(answer), deltaAfterResponse)
		}
		if !on && len(rec.OfType(messages.EvtLLMDelta)) != 0 {
			t.Error("llm.delta emitted with StreamDeltas off")
		}
	}
}
