package main

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/watch"
)

// runUI is what a run shows while it runs: the live view, or with --quiet
// one line per root round; it gets the run's events in-process.
type runUI struct {
	live  *liveView // nil with --quiet
	sinks []actors.Emitter
}

func newRunUI(quiet bool, stderr io.Writer, getenv func(string) string) *runUI {
	if quiet {
		return &runUI{sinks: []actors.Emitter{&progressLine{w: stderr}}}
	}
	live := newLiveView(stderr, getenv)
	return &runUI{live: live, sinks: []actors.Emitter{live}}
}

// start begins drawing (after the lines printed before the run).
func (u *runUI) start() {
	if u.live != nil {
		u.live.begin()
	}
}

// close draws the last frame.
func (u *runUI) close() {
	if u.live != nil {
		u.live.Close()
	}
}

// approver is who approves the run's mutating calls and answers its
// questions: everything (--yes), anyone on NATS (--ask-via nats, `watch
// --interactive`), the person at the terminal, or nobody (a headless run,
// where "ask" is a no at once).
func (f runFlags) approver(env runEnv, conn *bus.Conn, ui *runUI, stderr io.Writer, log zerolog.Logger) actors.Approver {
	switch {
	case f.yes:
		return yesApprover{}
	case f.askVia == "nats":
		return conn.NewApprover(log) // watch --interactive answers; nobody answering is a no
	case env.interactive:
		ta := pausingApprover{inner: &actors.TerminalApprover{In: env.stdin, Out: stderr}}
		if ui.live != nil && ui.live.tty {
			ta.view = ui.live.view
		}
		return ta
	}
	return nil
}

// yesApprover approves everything (--yes).
type yesApprover struct{}

func (yesApprover) Approve(context.Context, actors.ApprovalRequest) (bool, error) { return true, nil }

// progressLine prints one compact line per root round on stderr.
type progressLine struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *progressLine) Emit(ev messages.Event) {
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
