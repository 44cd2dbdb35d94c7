package console

import (
	"fmt"
	"io"
	"sync"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/watch"
)

// RunUI is what a run shows while it runs: the live view, or with --quiet
// one line per root round; it gets the run's events in-process.
type RunUI struct {
	live  *Live            // nil with --quiet
	Sinks []actors.Emitter // what gets the run's events
}

func NewRunUI(quiet bool, stderr io.Writer, getenv func(string) string) *RunUI {
	if quiet {
		return &RunUI{Sinks: []actors.Emitter{&ProgressLine{w: stderr}}}
	}
	live := NewLive(stderr, getenv)
	return &RunUI{live: live, Sinks: []actors.Emitter{live}}
}

// Start begins drawing (after the lines printed before the run).
func (u *RunUI) Start() {
	if u.live != nil {
		u.live.Begin()
	}
}

// View is the view the live view draws on a terminal, nil with --quiet
// or off a terminal: a question asked there pauses it.
func (u *RunUI) View() *watch.View {
	if u.live == nil || !u.live.tty {
		return nil
	}
	return u.live.view
}

// Close draws the last frame.
func (u *RunUI) Close() {
	if u.live != nil {
		u.live.Close()
	}
}

// ProgressLine prints one compact line per root round on stderr.
type ProgressLine struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *ProgressLine) Emit(ev messages.Event) {
	switch ev.Type {
	case messages.EvtAgentSpawned:
		d, err := messages.DecodeAs[messages.AgentSpawned](ev)
		if err != nil {
			return
		}
		where := ""
		if d.Placement == "remote" {
			where = " (remote)"
		}
		p.mu.Lock()
		fmt.Fprintf(p.w, "  + %s agent %s on %s%s\n", watch.Printable(d.Kind), watch.Printable(d.Child), watch.Printable(d.Model), where)
		p.mu.Unlock()
	case messages.EvtLLMResponse:
		if ev.Agent != actors.RootAgentID {
			return
		}
		d, err := messages.DecodeAs[messages.LLMResponse](ev)
		if err != nil {
			return
		}
		tools := "answer"
		if len(d.ToolCalls) > 0 {
			tools = watch.SummarizeCalls(d.ToolCalls)
		}
		cost := watch.Dollars(d.TotalCostUSD)
		if !d.CostKnown {
			cost = "cost unknown"
		}
		p.mu.Lock()
		fmt.Fprintf(p.w, "round %d · %s · %d tokens · %s\n", d.Round, tools, d.TotalTokens, cost)
		p.mu.Unlock()
	}
}
