package cluster

import (
	"errors"
	"fmt"
	"time"

	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/messages"
)

// Budget operations, the last token of <prefix>.budget.<run>.<op>.
const (
	opAcquire  = messages.BudgetOpAcquire
	opUsage    = messages.BudgetOpUsage
	opRelease  = messages.BudgetOpRelease
	opSnapshot = messages.BudgetOpSnapshot
)

// The error codes of the budget protocol, each tied to a budget sentinel
// so that errors.Is works on the far side.
var budgetCodes = []struct {
	code string
	err  error
}{
	{messages.CodeBudgetExhausted, budget.ErrBudgetExhausted},
	{messages.CodeTimeout, budget.ErrAcquireTimeout},
	{messages.CodeNotFound, budget.ErrUnknownAgent},
	{messages.CodeLimitExceeded, budget.ErrLimitExceeded},
	{messages.CodeConflict, budget.ErrDuplicateAgent},
	{messages.CodeReleased, budget.ErrReleased},
	{messages.CodeBadRequest, budget.ErrInvalidRequest},
	{messages.CodeCancelled, budget.ErrWithdrawn},
	{messages.CodeUnavailable, budget.ErrStopped},
	{messages.CodeUnreachable, budget.ErrUnreachable},
}

func toWireError(err error) *messages.Error {
	if err == nil {
		return nil
	}
	for _, c := range budgetCodes {
		if errors.Is(err, c.err) {
			return &messages.Error{Code: c.code, Message: err.Error()}
		}
	}
	return &messages.Error{Code: messages.CodeInternal, Message: err.Error()}
}

func fromWireError(e *messages.Error) error {
	if e == nil {
		return nil
	}
	for _, c := range budgetCodes {
		if c.code == e.Code {
			return fmt.Errorf("%w (remote: %s)", c.err, e.Message)
		}
	}
	return fmt.Errorf("budget service: %s: %s", e.Code, e.Message)
}

func acquireToBudget(r messages.BudgetAcquireRequest) budget.Acquire {
	a := budget.Acquire{Agent: r.Agent, Parent: r.Parent, Kind: r.Kind, Estimate: r.Estimate, EstimateUSD: r.EstimateUSD}
	if r.DeadlineUnixMS > 0 {
		a.Deadline = time.UnixMilli(r.DeadlineUnixMS)
	}
	return a
}

func grantToWire(l budget.Lease) *messages.BudgetGrant {
	return &messages.BudgetGrant{Agent: l.Agent, Parent: l.Parent, Kind: l.Kind, Tokens: l.Tokens, USD: l.USD,
		Ticket: l.Ticket, Order: l.Order, WaitedMS: l.Waited.Milliseconds()}
}

func grantToBudget(g *messages.BudgetGrant) budget.Lease {
	return budget.Lease{Agent: g.Agent, Parent: g.Parent, Kind: g.Kind, Tokens: g.Tokens, USD: g.USD,
		Ticket: g.Ticket, Order: g.Order, Waited: time.Duration(g.WaitedMS) * time.Millisecond}
}
