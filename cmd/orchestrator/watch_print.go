package main

import (
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
	v, err := ev.Decode()
	if err != nil {
		return
	}
	line := ""
	switch d := v.(type) {
	case *messages.AgentSpawned:
		line = fmt.Sprintf("spawned %s %s on %s: %s", d.Kind, d.Child, d.Model, clipLine(d.Task, 70))
	case *messages.LLMResponse:
		what := "answers"
		if len(d.ToolCalls) > 0 {
			what = summarizeCalls(d.ToolCalls)
		}
		line = fmt.Sprintf("round %d · %s", d.Round, what)
	case *messages.ToolFinished:
		if d.IsError {
			line = fmt.Sprintf("%s failed", d.Tool)
		} else if d.Cached {
			line = fmt.Sprintf("%s served from cache", d.Tool)
		}
	case *messages.PhaseChanged:
		line = fmt.Sprintf("plan accepted: now %s", d.Phase)
	case *messages.SpawnPlan:
		line = fmt.Sprintf("spawn plan: %d %s, ~%d tokens, policy %s", d.Count, agents(d.Count), d.EstimatedTokens, d.Policy)
	case *messages.BudgetWaiting:
		line = "waiting for budget"
	case *messages.DoomLoop:
		line = fmt.Sprintf("doom loop broken: %s repeated", d.Tool)
	case *messages.AgentEnded:
		line = fmt.Sprintf("%s after %d %s · %d tokens · %s", endWords(d.Status, d.Reason), d.Rounds, plural(d.Rounds, "round", "rounds"),
			d.TokensIn+d.TokensOut, dollars(d.CostUSD))
		if d.Error != "" {
			line += " · " + d.Error
		}
	case *messages.RunFinished:
		line = fmt.Sprintf("run %s", d.Status)
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

// endWords says how an agent ended: "finished", "cancelled", "failed",
// "stopped at its round limit", "stopped: budget exhausted".
func endWords(status, reason string) string {
	switch {
	case status == "completed" && reason == "round_limit":
		return "stopped at its round limit"
	case status == "completed" && reason == "budget_exhausted":
		return "stopped: budget exhausted"
	case status == "completed" && reason == "plan_submitted":
		return "submitted its plan"
	case status == "completed":
		return "finished"
	}
	return status
}

// plural picks the singular for 1.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// dollars formats a cost.
func dollars(usd float64) string { return fmt.Sprintf("$%.4f", usd) }

func clipLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
