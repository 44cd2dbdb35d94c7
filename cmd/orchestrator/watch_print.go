package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// eventPrinter renders lifecycle events as one compact line each, for
// people watching a swarm: who started, what each round called, who
// finished with what, and what it cost.
type eventPrinter struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func newEventPrinter(w io.Writer) *eventPrinter { return &eventPrinter{w: w, start: time.Now()} }

// Emit prints the events worth a line.
func (p *eventPrinter) Emit(ev messages.Event) {
	var d map[string]any
	_ = json.Unmarshal(ev.Data, &d)
	line := ""
	switch ev.Type {
	case messages.EvtAgentSpawned:
		line = fmt.Sprintf("spawned %s %s on %s: %s", d["kind"], d["child"], d["model"], clipLine(str(d["task"]), 70))
	case messages.EvtLLMResponse:
		calls, _ := d["tool_calls"].([]any)
		what := "answers"
		if len(calls) > 0 {
			names := make([]string, len(calls))
			for i, c := range calls {
				names[i] = str(c)
			}
			what = summarizeCalls(names)
		}
		line = fmt.Sprintf("round %v · %s", d["round"], what)
	case messages.EvtToolFinished:
		if d["is_error"] == true {
			line = fmt.Sprintf("%s failed", d["tool"])
		} else if d["cached"] == true {
			line = fmt.Sprintf("%s served from cache", d["tool"])
		}
	case messages.EvtPhaseChanged:
		line = fmt.Sprintf("plan accepted: now %s", d["phase"])
	case messages.EvtSpawnPlan:
		line = fmt.Sprintf("spawn plan: %v agents, ~%v tokens, policy %s", d["count"], d["estimated_tokens"], d["policy"])
	case messages.EvtBudgetWaiting:
		line = "waiting for budget"
	case messages.EvtDoomLoop:
		line = fmt.Sprintf("doom loop broken: %s repeated", d["tool"])
	case messages.EvtAgentFinished, messages.EvtAgentFailed, messages.EvtAgentCancelled:
		if _, ok := d["status"]; !ok {
			return
		}
		usage, _ := d["usage"].(map[string]any)
		tokens := num(usage["prompt_tokens"]) + num(usage["completion_tokens"])
		line = fmt.Sprintf("%s (%s) after %v rounds · %.0f tokens · $%.4f", d["status"], d["reason"], d["rounds"], tokens, num(d["cost"]))
		if e := str(d["error"]); e != "" {
			line += " · " + e
		}
	case messages.EvtRunFinished:
		line = fmt.Sprintf("run %s", d["status"])
	default:
		return
	}
	if line == "" {
		return
	}
	p.mu.Lock()
	fmt.Fprintf(p.w, "%6.2fs  %-18s %s\n", time.Since(p.start).Seconds(), ev.Agent, line)
	p.mu.Unlock()
}

func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

func clipLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
