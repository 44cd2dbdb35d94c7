package actors

import (
	"context"
	"errors"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/messages"
)

// A model call's usage is charged to the budget before the agent's next
// round. When the answer has tool calls, the charge travels while they
// run (chargeAsync), off the round's path; the next round waits for its
// answer (startRound defers itself while usageOut > 0), so the budget's
// state, a wrap-up or an unreachable budget, is known before the next
// model call exactly as when the charge is made in line.

// charge reports u to the budget and reads its answer.
func (a *agent) charge(ctx context.Context, u budget.Usage) usageDone {
	var out usageDone
	rep, err := a.rt.budget.Usage(ctx, u)
	switch {
	case errors.Is(err, budget.ErrUnreachable) && a.ctx.Err() == nil:
		out.budgetLost = err
	case err != nil && a.ctx.Err() == nil:
		a.log.Warn().Err(err).Msg("budget usage")
	case err == nil:
		out.budgetState, out.budgetLent, out.budgetLeft = rep.State, rep.Lent, rep.Remaining
		out.chargedCalls = u.ToolCalls
	}
	return out
}

// chargeAsync charges u off the mailbox and sends the answer to the
// actor. The charge is made even if the agent is cancelled meanwhile (its
// lease is released only once the charge is done, see finalize); tool
// calls it charged are counted in unapplied until the actor takes the
// answer, so a release in between does not charge them twice.
func (a *agent) chargeAsync(u budget.Usage) {
	defer a.usageWG.Done()
	res := a.charge(context.WithoutCancel(a.ctx), u)
	a.unapplied.Add(res.chargedCalls)
	a.rt.system.Root.Send(a.self, &res)
}

// onUsage takes the answer of a charge made off the round's path and
// starts the round that waited for it.
func (a *agent) onUsage(c actor.Context, m *usageDone) {
	if a.ended {
		return // finalize counted its calls (unapplied)
	}
	a.unapplied.Add(-m.chargedCalls)
	a.usageOut-- // may go below 0 until its modelDone arrives
	a.applyUsage(m)
	if a.startDeferred && a.usageOut <= 0 {
		a.startDeferred = false
		a.startRound(c)
	}
}

// applyUsage takes in the budget's answer to a usage report.
func (a *agent) applyUsage(m *usageDone) {
	if m.budgetLost != nil {
		a.budgetLost = m.budgetLost
	}
	a.unchargedCalls -= m.chargedCalls
	if m.budgetState == messages.BudgetStateExhausted && m.budgetLent == 0 {
		a.wrapUp, a.budgetLeft = true, m.budgetLeft
	}
}
