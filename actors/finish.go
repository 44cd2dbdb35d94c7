package actors

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/messages"
)

// finish ends the agent once: it settles its children, emits its final
// event, releases its budget lease, hands its result to whoever waits and
// stops the actor.
func (a *agent) finish(c actor.Context, r AgentResult) {
	if a.ended {
		return
	}
	if r.Status == StatusCompleted && a.rt.settings.OnParentFinish == "wait" && a.kids.running() > 0 {
		// Finish once the background children have ended (onChildEnded).
		a.kids.pendingFinish = &r
		return
	}
	a.ended = true
	a.kids.settle(c, a)
	a.finalize(r)
	c.Stop(c.Self())
}

// finalize is the end of every agent, however it ends (finish, or a stop
// from outside): one final event, the lease released, the result delivered
// once the last checkpoint is on disk.
func (a *agent) finalize(r AgentResult) {
	a.cancel()
	r.Agent, r.Kind, r.Rounds = a.spec.id, a.spec.kind.Name, a.round
	r.Usage, r.Cost, r.ToolCalls, r.Model = a.usage, a.cost, a.toolCalls, a.model
	if r.Plan == nil {
		r.Plan = a.plan
	}
	typ := messages.EvtAgentFinished
	switch r.Status {
	case StatusFailed:
		typ = messages.EvtAgentFailed
	case StatusCancelled:
		typ = messages.EvtAgentCancelled
	}
	data := map[string]any{"status": r.Status, "reason": r.Reason, "rounds": r.Rounds,
		"usage": r.Usage, "cost": r.Cost, "tool_calls": r.ToolCalls, "text": clip(r.Text, 2000)}
	if r.Err != "" {
		data["error"] = r.Err
	}
	if r.Plan != nil {
		data["plan"] = r.Plan
	}
	if f := findingsOf(a.spec.kind.Name, r.Text); len(f) > 0 {
		data["findings"] = f
	}
	if a.ev == nil { // ended before start completed
		a.ev = newAgentEvents(a.rt.events, a.rt.run, a.spec.id, a.spec.parent, a.spec.kind.Name, a.rt.node, a.log)
	}
	a.ev.emit(typ, data)
	if a.rt.budget != nil {
		uncharged := a.unchargedCalls
		a.goSafe("release lease", func() { a.release(r.Usage.Total(), uncharged) })
	}
	ck := a.ckpt
	a.goSafe("deliver result", func() {
		if ck != nil {
			ck.flush()
		}
		a.deliver(r)
	})
}

// goSafe runs fn in a goroutine that logs a panic instead of crashing the
// process (a panic off the mailbox is not supervised).
func (a *agent) goSafe(what string, fn func()) {
	go func() {
		defer func() {
			if v := recover(); v != nil {
				a.log.Error().Interface("panic", v).Bytes("stack", debug.Stack()).Msg(what + " panicked")
			}
		}()
		fn()
	}()
}

// release returns the agent's unused reservation. It runs in a goroutine:
// the budget actor answers through a future.
func (a *agent) release(used int, toolCalls int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if toolCalls > 0 { // the last rounds' calls, not charged yet
		if _, err := a.rt.budget.Usage(ctx, budget.Usage{Agent: a.spec.id, ToolCalls: toolCalls}); err != nil {
			a.log.Debug().Err(err).Msg("charge last tool calls")
		}
	}
	rel, err := a.rt.budget.Release(ctx, budget.Release{Agent: a.spec.id, Used: int64(used)})
	if err != nil {
		a.log.Warn().Err(err).Msg("release budget lease")
		return
	}
	if !rel.Already {
		a.ev.emit(messages.EvtBudgetReleased, rel.Wire())
	}
}

func (a *agent) deliver(r AgentResult) {
	if a.spec.done != nil {
		done := a.spec.done
		a.spec.done = nil
		done(r)
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
