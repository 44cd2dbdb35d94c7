package messages

import (
	"fmt"
)

// Budget operations, the last token of <prefix>.budget.<run>.<op>.
const (
	BudgetOpAcquire  = "acquire"
	BudgetOpUsage    = "usage"
	BudgetOpRelease  = "release"
	BudgetOpSnapshot = "snapshot"
)

// BudgetAcquireRequest asks the run's budget for a lease.
type BudgetAcquireRequest struct {
	V           int     `json:"v"`
	Agent       string  `json:"agent"`
	Parent      string  `json:"parent,omitempty"`
	Kind        string  `json:"kind"`
	Estimate    int64   `json:"estimate"`
	EstimateUSD float64 `json:"estimate_usd,omitempty"`
	// DeadlineUnixMS bounds the wait (0: the budget's acquire timeout).
	DeadlineUnixMS int64 `json:"deadline_unix_ms,omitempty"`
	// Node is the node that asks (its agents' children): when it stops
	// heartbeating, the leases it holds come back.
	Node string `json:"node,omitempty"`
}

// Validate checks an acquire request.
func (r *BudgetAcquireRequest) Validate() error {
	if err := checkVersion("budget acquire", r.V); err != nil {
		return err
	}
	if err := checkID("agent", r.Agent); err != nil {
		return err
	}
	if err := checkOptID("parent", r.Parent); err != nil {
		return err
	}
	if err := checkOptID("node", r.Node); err != nil {
		return err
	}
	if r.Estimate <= 0 || r.EstimateUSD < 0 {
		return fmt.Errorf("%w: budget acquire for %s: estimate must be positive", ErrBadMessage, r.Agent)
	}
	return nil
}

// BudgetGrant is a granted lease.
type BudgetGrant struct {
	Agent    string  `json:"agent"`
	Parent   string  `json:"parent,omitempty"`
	Kind     string  `json:"kind"`
	Tokens   int64   `json:"tokens"`
	USD      float64 `json:"usd,omitempty"`
	Ticket   uint64  `json:"ticket"`
	Order    uint64  `json:"order"`
	WaitedMS int64   `json:"waited_ms"`
}

// BudgetAcquireReply answers an acquire: a grant or an error.
type BudgetAcquireReply struct {
	V     int          `json:"v"`
	Grant *BudgetGrant `json:"grant,omitempty"`
	Error *Error       `json:"error,omitempty"`
}

// Validate checks an acquire reply.
func (r *BudgetAcquireReply) Validate() error {
	if r.Grant == nil && r.Error == nil {
		return fmt.Errorf("%w: budget acquire reply without grant or error", ErrBadMessage)
	}
	return nil
}

// BudgetReport charges an agent's lease (usage after a model call or a
// tool batch).
type BudgetReport struct {
	V         int     `json:"v"`
	Agent     string  `json:"agent"`
	Tokens    int64   `json:"tokens"`
	CostUSD   float64 `json:"cost_usd"`
	ToolCalls int64   `json:"tool_calls"`
	// TopUp asks for up to this many more tokens if the charge uses the
	// lease up.
	TopUp int64 `json:"top_up,omitempty"`
}

// Validate checks a usage report.
func (r *BudgetReport) Validate() error {
	if err := checkVersion("budget report", r.V); err != nil {
		return err
	}
	if err := checkID("agent", r.Agent); err != nil {
		return err
	}
	if r.Tokens < 0 || r.CostUSD < 0 || r.ToolCalls < 0 || r.TopUp < 0 {
		return fmt.Errorf("%w: budget report for %s: negative amounts", ErrBadMessage, r.Agent)
	}
	return nil
}

// BudgetReportReply answers a report: the lease's state afterwards.
type BudgetReportReply struct {
	V         int         `json:"v"`
	State     BudgetState `json:"state"`
	Remaining int64       `json:"remaining"`
	Used      int64       `json:"used"`
	Granted   int64       `json:"granted"`
	Lent      int64       `json:"lent"`
	ToppedUp  int64       `json:"topped_up"`
	Error     *Error      `json:"error,omitempty"`
}

// Validate accepts every reply.
func (r *BudgetReportReply) Validate() error { return nil }

// BudgetRelease ends an agent's lease.
type BudgetRelease struct {
	V     int    `json:"v"`
	Agent string `json:"agent"`
	Used  int64  `json:"used"`
}

// Validate checks a release.
func (r *BudgetRelease) Validate() error {
	if err := checkVersion("budget release", r.V); err != nil {
		return err
	}
	if err := checkID("agent", r.Agent); err != nil {
		return err
	}
	if r.Used < 0 {
		return fmt.Errorf("%w: budget release for %s: negative usage", ErrBadMessage, r.Agent)
	}
	return nil
}

// BudgetReleaseReply answers a release.
type BudgetReleaseReply struct {
	V        int         `json:"v"`
	Agent    string      `json:"agent"`
	Used     BudgetUsage `json:"used"`
	Returned int64       `json:"returned"`
	Already  bool        `json:"already"`
	Error    *Error      `json:"error,omitempty"`
}

// Validate accepts every reply.
func (r *BudgetReleaseReply) Validate() error { return nil }

// BudgetSnapshotRequest asks for the run's budget snapshot.
type BudgetSnapshotRequest struct {
	V int `json:"v"`
}

// Validate checks a snapshot request.
func (r *BudgetSnapshotRequest) Validate() error { return checkVersion("budget snapshot", r.V) }

// BudgetSnapshotReply carries the snapshot, or an error.
type BudgetSnapshotReply struct {
	V        int             `json:"v"`
	Snapshot *BudgetSnapshot `json:"snapshot,omitempty"`
	Error    *Error          `json:"error,omitempty"`
}

// Validate checks a snapshot reply.
func (r *BudgetSnapshotReply) Validate() error {
	if r.Snapshot == nil && r.Error == nil {
		return fmt.Errorf("%w: snapshot reply without snapshot or error", ErrBadMessage)
	}
	return nil
}
