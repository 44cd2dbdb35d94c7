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
	opAcquire  = "acquire"
	opUsage    = "usage"
	opRelease  = "release"
	opSnapshot = "snapshot"
)

// wireError is an error on the wire: a stable code and a message.
type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// The error codes of the budget protocol, each tied to a budget sentinel
// so that errors.Is works on the far side.
var budgetCodes = []struct {
	code string
	err  error
}{
	{"budget_exhausted", budget.ErrBudgetExhausted},
	{"timeout", budget.ErrAcquireTimeout},
	{"not_found", budget.ErrUnknownAgent},
	{"limit_exceeded", budget.ErrLimitExceeded},
	{"duplicate", budget.ErrDuplicateAgent},
	{"released", budget.ErrReleased},
	{"bad_request", budget.ErrInvalidRequest},
	{"cancelled", budget.ErrWithdrawn},
	{"unavailable", budget.ErrStopped},
}

func toWireError(err error) *wireError {
	if err == nil {
		return nil
	}
	for _, c := range budgetCodes {
		if errors.Is(err, c.err) {
			return &wireError{Code: c.code, Message: err.Error()}
		}
	}
	return &wireError{Code: "internal", Message: err.Error()}
}

func (e *wireError) toError() error {
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

type acquireReq struct {
	V           int     `json:"v"`
	Agent       string  `json:"agent"`
	Parent      string  `json:"parent,omitempty"`
	Kind        string  `json:"kind"`
	Estimate    int64   `json:"estimate"`
	EstimateUSD float64 `json:"estimate_usd,omitempty"`
	DeadlineMS  int64   `json:"deadline_unix_ms,omitempty"`
}

type leaseWire struct {
	Agent    string  `json:"agent"`
	Parent   string  `json:"parent,omitempty"`
	Kind     string  `json:"kind"`
	Tokens   int64   `json:"tokens"`
	USD      float64 `json:"usd,omitempty"`
	Ticket   uint64  `json:"ticket"`
	Order    uint64  `json:"order"`
	WaitedMS int64   `json:"waited_ms"`
}

type acquireReply struct {
	V      int        `json:"v"`
	Lease  *leaseWire `json:"lease,omitempty"`
	Queued *struct {
		Position int    `json:"position"`
		Reason   string `json:"reason"`
		Pool     string `json:"pool"`
	} `json:"queued,omitempty"`
	Error *wireError `json:"error,omitempty"`
}

type usageReq struct {
	V         int     `json:"v"`
	Agent     string  `json:"agent"`
	Tokens    int64   `json:"tokens"`
	CostUSD   float64 `json:"cost_usd"`
	ToolCalls int64   `json:"tool_calls"`
	TopUp     int64   `json:"top_up,omitempty"`
}

type usageReply struct {
	V         int                  `json:"v"`
	State     messages.BudgetState `json:"state"`
	Remaining int64                `json:"remaining"`
	Used      int64                `json:"used"`
	Granted   int64                `json:"granted"`
	Lent      int64                `json:"lent"`
	ToppedUp  int64                `json:"topped_up"`
	Error     *wireError           `json:"error,omitempty"`
}

type releaseReq struct {
	V     int    `json:"v"`
	Agent string `json:"agent"`
	Used  int64  `json:"used"`
}

type releaseReply struct {
	V        int                  `json:"v"`
	Agent    string               `json:"agent"`
	Used     messages.BudgetUsage `json:"used"`
	Returned int64                `json:"returned"`
	Already  bool                 `json:"already"`
	Error    *wireError           `json:"error,omitempty"`
}

type snapshotReply struct {
	V        int                      `json:"v"`
	Snapshot *messages.BudgetSnapshot `json:"snapshot,omitempty"`
	Error    *wireError               `json:"error,omitempty"`
}

func (r acquireReq) toBudget() budget.Acquire {
	a := budget.Acquire{Agent: r.Agent, Parent: r.Parent, Kind: r.Kind, Estimate: r.Estimate, EstimateUSD: r.EstimateUSD}
	if r.DeadlineMS > 0 {
		a.Deadline = time.UnixMilli(r.DeadlineMS)
	}
	return a
}

func leaseToWire(l budget.Lease) *leaseWire {
	return &leaseWire{Agent: l.Agent, Parent: l.Parent, Kind: l.Kind, Tokens: l.Tokens, USD: l.USD,
		Ticket: l.Ticket, Order: l.Order, WaitedMS: l.Waited.Milliseconds()}
}

func (l *leaseWire) toBudget() budget.Lease {
	return budget.Lease{Agent: l.Agent, Parent: l.Parent, Kind: l.Kind, Tokens: l.Tokens, USD: l.USD,
		Ticket: l.Ticket, Order: l.Order, Waited: time.Duration(l.WaitedMS) * time.Millisecond}
}
