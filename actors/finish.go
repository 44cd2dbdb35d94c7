package actors

import (
	"context"
	"encoding/json"
	"runtime/debug"
	"slices"
	"time"

	"github.com/troupe-ai/troupe/internal/text"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/changes"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/telemetry"
)

// finish ends the agent once: it settles its children, emits its final
// event, releases its budget lease, hands its result to whoever waits and
// stops the actor. Children still running are cancelled first, and the
// agent finalizes only once they have all ended (or after
// settleTimeout), so that when its result is delivered every lease of its
// sub-tree is back.
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
	a.cancel()
	if a.kids.running() > 0 {
		a.kids.settle(c, a)
		a.kids.closing = &r
		self, root := c.Self(), a.rt.system.Root
		time.AfterFunc(settleTimeout, func() { root.Send(self, &settleExpired{}) })
		return
	}
	a.finalize(r)
	c.Stop(c.Self())
}

// settleTimeout bounds how long an ending agent waits for its cancelled
// children before it stops them outright.
const settleTimeout = 10 * time.Second

// settleExpired: the children of an ending agent did not end in time.
type settleExpired struct{}

// closeIfSettled finalizes an ended agent whose children have all ended.
func (a *agent) closeIfSettled(c actor.Context) {
	if a.kids == nil || a.kids.closing == nil || a.kids.running() > 0 {
		return
	}
	r := *a.kids.closing
	a.kids.closing = nil
	a.finalize(r)
	c.Stop(c.Self())
}

// finalize is the end of every agent, however it ends (finish, or a stop
// from outside): one final event, then, off the mailbox and in this
// order, the lease released and the result delivered, so whoever gets the
// result finds the lease already back. (Checkpoints are already on disk:
// a tool step writes them before it reports.)
func (a *agent) finalize(r AgentResult) {
	a.cancel()
	if a.ckpt != nil {
		a.ckpt.close()
	}
	r.Agent, r.Kind, r.Rounds = a.spec.id, a.spec.kind.Name, a.round
	r.Usage, r.Cost, r.ToolCalls, r.Model = a.usage, a.cost, a.toolCalls, a.model
	if r.Plan == nil {
		r.Plan = a.plan
	}
	for p := range a.changed {
		r.Changed = append(r.Changed, p)
	}
	slices.Sort(r.Changed)
	typ := messages.EvtAgentFinished
	switch r.Status {
	case StatusFailed:
		typ = messages.EvtAgentFailed
	case StatusCancelled:
		typ = messages.EvtAgentCancelled
	}
	data := messages.AgentEnded{Status: r.Status, Reason: r.Reason, Rounds: r.Rounds, TokensIn: r.Usage.PromptTokens,
		TokensOut: r.Usage.CompletionTokens, CostUSD: r.Cost, Unpriced: a.unpriced, ToolCalls: r.ToolCalls, Model: r.Model,
		Text: text.Clip(r.Text, 2000), Error: r.Err, Findings: findingsOf(a.spec.kind.Name, r.Text), Changed: r.Changed}
	if r.Plan != nil {
		data.Plan, _ = json.Marshal(r.Plan)
	}
	if a.ev == nil { // ended before start completed
		a.ev = newAgentEvents(a.rt.events, a.rt.run, a.spec.id, a.spec.parent, a.spec.kind.Name, a.rt.node, a.log).withAttempt(a.spec.attempt)
	}
	a.ev.emit(typ, data)
	a.span.EndAgent(telemetry.AgentEnd{Status: r.Status, Reason: r.Reason, Failed: r.Status == StatusFailed, Rounds: r.Rounds,
		InputTokens: r.Usage.PromptTokens, OutputTokens: r.Usage.CompletionTokens, Cost: r.Cost})
	uncharged, ev, session := a.unchargedCalls, a.ev, a.session
	spec := a.spec
	a.goSafe("end agent", func() {
		if session != nil {
			// Its shell sessions, background jobs and MCP server
			// instances end with it, before its worktree is captured
			// (what they write as they exit is in).
			if err := session.Close(); err != nil {
				a.log.Warn().Err(err).Msg("close tool session")
			}
		}
		if spec.iso != nil {
			out := spec.iso.end(spec.parentEv, changes.Ending{Completed: r.Status == StatusCompleted})
			r.Changes, r.Nested = out.Changes, out.Carried
		}
		// A charge still on its way lands before the lease goes, and the
		// tool calls it charged are not charged again.
		a.usageWG.Wait()
		a.rt.releaseLease(a.spec.id, int64(r.Usage.Total()), uncharged-a.unapplied.Load(), ev)
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

// releaseLease returns an agent's unused reservation, charging its last
// uncharged tool calls first, and emits budget.released on ev (when not
// nil). It blocks on the budget actor: call it off the mailbox.
func (rt *runtime) releaseLease(agent string, used int64, toolCalls int64, ev *agentEvents) {
	if rt.budget == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if toolCalls > 0 { // the last rounds' calls, not charged yet
		if _, err := rt.budget.Usage(ctx, budget.Usage{Agent: agent, ToolCalls: toolCalls}); err != nil {
			rt.log.Debug().Err(err).Str("agent", agent).Msg("charge last tool calls")
		}
	}
	rel, err := rt.budget.Release(ctx, budget.Release{Agent: agent, Used: used})
	if err != nil {
		rt.log.Warn().Err(err).Str("agent", agent).Msg("release budget lease")
		return
	}
	if !rel.Already && ev != nil {
		ev.emit(messages.EvtBudgetReleased, rel.Wire())
	}
}

func (a *agent) deliver(r AgentResult) {
	if a.spec.done != nil {
		done := a.spec.done
		a.spec.done = nil
		done(r)
	}
}
