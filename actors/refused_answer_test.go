package actors_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// A hostile model streams 100 MB of tool arguments, then answers with
// 10,000 tool calls. The first answer is refused at 1 MiB and the round
// runs again with the model told why; the second is refused at the 65th
// call and the agent fails, saying so. No tool ran, and the run's heap
// stayed within a few MiB of the caps.
func TestHostileAnswersRefused(t *testing.T) {
	many := make([]llmtest.ToolCall, 10_000)
	for i := range many {
		many[i] = tc("read_file", fmt.Sprintf(`{"path":"f%d.go"}`, i))
	}
	srv := llmtest.New(script(kind("root", llmtest.Flooded(0, 100<<20), calls(many...))))
	defer srv.Close()
	rec := &actors.Recorder{}
	o := options(t, srv, workspace(t, map[string]string{"a.go": "package a\n"}), "write a file", rec)
	var res actors.Result
	used := llmtest.Measure(func() { res = run(t, o) })
	t.Log(used)
	if res.Status != actors.StatusFailed || !strings.Contains(res.Err, "refused twice") || !strings.Contains(res.Err, "agent.max_tool_calls_per_round") {
		t.Fatalf("result %+v: want failed, refused twice, naming the setting", res.AgentResult)
	}
	refused := rec.OfType(messages.EvtLLMRefused)
	if len(refused) != 2 {
		t.Fatalf("%d llm.refused events, want 2", len(refused))
	}
	for _, ev := range refused {
		if err := strictDecode(ev); err != nil {
			t.Error(err)
		}
	}
	first, _ := messages.DecodeAs[messages.LLMRefused](refused[0])
	second, _ := messages.DecodeAs[messages.LLMRefused](refused[1])
	if first.Limit != "tool_call" || first.Max != 1<<20 || !first.Retry || first.Setting != "model.max_response_bytes.tool_call" {
		t.Errorf("first refusal %+v", first)
	}
	if second.Limit != "tool_calls" || second.Max != 64 || second.Retry {
		t.Errorf("second refusal %+v", second)
	}
	if n := len(rec.OfType(messages.EvtToolStarted)); n != 0 {
		t.Errorf("%d tools started from refused answers", n)
	}
	// The model is told: the retried round's request carries the refusal.
	// (A refused flood is recorded once the server sees its client gone.)
	checkFor(t, 10*time.Second, func() error {
		if n := srv.InFlight(); n != 0 {
			return fmt.Errorf("%d requests in flight", n)
		}
		return nil
	})
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2 (one per round, no client retries)", len(reqs))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != "user" || !strings.Contains(last.Content, "refused") || !strings.Contains(last.Content, "model.max_response_bytes.tool_call") {
		t.Errorf("the retried round's last message is %q: the model was not told", last.Content)
	}
	if used.Peak > 40<<20 {
		t.Errorf("the heap grew %.1f MiB: the answer was read past its cap", float64(used.Peak)/(1<<20))
	}
}

// A model that answers too much once and then behaves finishes normally.
func TestRefusedOnceThenAnswered(t *testing.T) {
	srv := llmtest.New(script(kind("root", llmtest.Flooded(50<<20, 0), say("short answer"))))
	defer srv.Close()
	rec := &actors.Recorder{}
	res := run(t, options(t, srv, workspace(t, nil), "answer", rec))
	if res.Status != actors.StatusCompleted || res.Text != "short answer" {
		t.Fatalf("result %+v", res.AgentResult)
	}
	if n := len(rec.OfType(messages.EvtLLMRefused)); n != 1 {
		t.Errorf("%d llm.refused events, want 1", n)
	}
}
