package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// hostileRun runs the orchestrator with the root scripted by turns, its
// events on the server at url, and returns the run's result, its exit
// code and the process's peak resident memory in bytes (getrusage of the
// child: a figure, not a timing).
func hostileRun(t *testing.T, ws, url string, srv *llmtest.Server) (runResult, int, int64) {
	t.Helper()
	p := start(t, bin.orchestrator, modelEnv(srv), "run", "--nats", url, "--workspace", ws, "--json", "--yes", "--ephemeral", "hostile")
	code := p.wait(5 * time.Minute)
	var res runResult
	if err := json.Unmarshal([]byte(p.out()), &res); err != nil {
		t.Fatalf("run --json (exit %d): %v\n%.2000s\n%s", code, err, p.out(), p.errs())
	}
	ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no rusage of the run")
	}
	return res, code, ru.Maxrss << 10 // KiB on Linux
}

// Attack 8 of issue 28: a hostile model answers through orchestrator run
// with 100 MB of streamed tool-call arguments, 100 MB of text, or 10,000
// tool calls, twice. Each answer is refused at its cap: an llm.refused
// event names the cap and its setting, the model is told (its retried
// round's last message names the setting), the second refusal fails the
// root with an error naming it, no tool runs, the flood never becomes the
// run's text, and the orchestrator's peak memory stays within 64 MiB
// over an honest run's (the caps are 1 MiB and 4 MiB; reading 100 MB
// whole would pass it). A second run on the same workspace is unaffected.
func TestAttackHostileModelOutputBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	ws := attackWS(t)
	url := jetStreamServer(t).ClientURL()
	honest := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
		{ToolCalls: []llmtest.ToolCall{call("read_file", map[string]string{"path": "a.txt"})}}, {Text: "honest"}}}}})
	t.Cleanup(honest.Close)
	res, code, base := hostileRun(t, ws, url, honest)
	if code != 0 || res.Status != "completed" || res.Text != "honest" {
		t.Fatalf("the honest run: exit %d, %+v", code, res)
	}
	t.Logf("an honest run's peak RSS: %.1f MiB", float64(base)/(1<<20))

	const hundredMB = 100 << 20
	many := make([]llmtest.ToolCall, 10_000)
	for i := range many {
		many[i] = call("read_file", map[string]string{"path": fmt.Sprintf("f%d.txt", i)})
	}
	for _, c := range []struct {
		name           string
		turn           llmtest.Turn
		limit, setting string
		max            int64
	}{
		{"100 MB of streamed tool-call arguments", llmtest.Flooded(0, hundredMB), "tool_call", "model.max_response_bytes.tool_call", 1 << 20},
		{"100 MB of text", llmtest.Flooded(hundredMB, 0), "text", "model.max_response_bytes.text", 4 << 20},
		{"10,000 tool calls", llmtest.Turn{ToolCalls: many}, "tool_calls", "agent.max_tool_calls_per_round", 64},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "root"},
				Turns: []llmtest.Turn{c.turn, c.turn, {Text: "accepted after all"}}}}})
			t.Cleanup(srv.Close)
			res, code, peak := hostileRun(t, ws, url, srv)
			t.Logf("peak RSS %.1f MiB (%.1f MiB over the honest run's)", float64(peak)/(1<<20), float64(peak-base)/(1<<20))
			if code == 0 || res.Status != "failed" || len(res.Text) > 4<<10 {
				t.Errorf("exit %d, status %q, %d bytes of text: want the root failed, the flood not its answer", code, res.Status, len(res.Text))
			}
			if peak > base+64<<20 {
				t.Errorf("peak RSS %.1f MiB, an honest run's %.1f MiB: the answer was read past its cap",
					float64(peak)/(1<<20), float64(base)/(1<<20))
			}
			checkRefused(t, storedEvents(t, url, res.Run), c.limit, c.setting, c.max)
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests, want 2 (one per round, no retry of a refused answer by the client)", len(reqs))
			}
			last := reqs[1].Messages[len(reqs[1].Messages)-1]
			if last.Role != "user" || !strings.Contains(last.Content, "refused") || !strings.Contains(last.Content, c.setting) {
				t.Errorf("the retried round's last message %.300q does not name %s", last.Content, c.setting)
			}
		})
	}
	secondRun(t, ws, t.TempDir()+"/pwned")
}

// checkRefused asserts two llm.refused events for the cap (the first
// retried, the second not), the root's failure naming the setting, and
// no tool started.
func checkRefused(t *testing.T, evs []messages.Event, limit, setting string, max int64) {
	t.Helper()
	var refused []messages.LLMRefused
	failed := false
	for _, ev := range evs {
		switch ev.Type {
		case messages.EvtLLMRefused:
			r, err := messages.DecodeAs[messages.LLMRefused](ev)
			must(t, err)
			refused = append(refused, r)
		case messages.EvtToolStarted:
			t.Errorf("a tool started from a refused answer: %s", ev.Data)
		case messages.EvtAgentFailed:
			failed = strings.Contains(string(ev.Data), setting)
		}
	}
	if len(refused) != 2 {
		t.Fatalf("%d llm.refused events, want 2", len(refused))
	}
	for i, r := range refused {
		if r.Limit != limit || r.Max != max || r.Setting != setting || r.Retry != (i == 0) || !strings.Contains(r.Error, setting) {
			t.Errorf("refusal %d: %+v, want cap %s of %d (%s), retry %v", i+1, r, limit, max, setting, i == 0)
		}
	}
	if !failed {
		t.Errorf("no agent.failed event naming %s", setting)
	}
}
