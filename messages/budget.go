package messages

import "time"

// BudgetSnapshotVersion is the version of the BudgetSnapshot payload.
const BudgetSnapshotVersion = 1

// BudgetState is the state of one agent's budget lease, as a Usage reply and
// a snapshot report it.
type BudgetState string

// The lease states.
const (
	// BudgetStateOK: the lease has tokens left and the run is within its limits.
	BudgetStateOK BudgetState = "ok"
	// BudgetStateExhausted: the lease is used up and no top-up could be had, or
	// the run as a whole hit one of its limits. The agent gets one final
	// wrap-up round and then ends with reason budget_exhausted.
	BudgetStateExhausted BudgetState = "exhausted"
	// BudgetStateReleased: the agent ended and its lease went back to its parent.
	BudgetStateReleased BudgetState = "released"
)

// Reasons a budget acquire waits, carried by BudgetWaiting.Reason.
const (
	BudgetWaitTokens = "tokens" // the pool it draws from has too few tokens (or dollars)
	BudgetWaitSlots  = "slots"  // no concurrency slot is free (global or for its kind)
)

// BudgetUsage is an amount of spending: tokens, dollars and tool calls.
type BudgetUsage struct {
	Tokens    int64   `json:"tokens"`
	CostUSD   float64 `json:"cost_usd"`
	ToolCalls int64   `json:"tool_calls"`
}

// BudgetLimits are a run's limits as the snapshot reports them; zero means
// no limit, except Tokens which is always set.
type BudgetLimits struct {
	Tokens        int64          `json:"tokens"`
	USD           float64        `json:"usd,omitempty"`
	ToolCalls     int64          `json:"tool_calls,omitempty"`
	WallTimeMS    int64          `json:"wall_time_ms,omitempty"`
	MaxConcurrent int            `json:"max_concurrent,omitempty"`
	PerKind       map[string]int `json:"per_kind,omitempty"`
}

// BudgetAgent is one agent's line of a BudgetSnapshot. Reserved is what the
// lease currently holds from its parent's pool (the grant, or more when the
// agent overshot it; zero once released). Available is what is left of the
// grant for the agent's own use and its children's leases (negative when
// overshot). Subtree sums the agent's own usage and all its descendants'.
type BudgetAgent struct {
	Agent       string      `json:"agent"`
	Parent      string      `json:"parent,omitempty"`
	Kind        string      `json:"kind"`
	State       BudgetState `json:"state"`
	Granted     int64       `json:"granted"`
	GrantedUSD  float64     `json:"granted_usd,omitempty"`
	Reserved    int64       `json:"reserved"`
	Available   int64       `json:"available"`
	Used        BudgetUsage `json:"used"`
	Subtree     BudgetUsage `json:"subtree"`
	Children    int         `json:"children"`
	Descendants int         `json:"descendants"`
	AcquiredAt  time.Time   `json:"acquired_at"`
	ReleasedAt  *time.Time  `json:"released_at,omitempty"`
}

// BudgetKindTotals is the rollup of every agent of one kind.
type BudgetKindTotals struct {
	Agents int         `json:"agents"`
	Live   int         `json:"live"`
	Used   BudgetUsage `json:"used"`
}

// BudgetSnapshot is the state of a run's budget at one moment: the run's
// totals, one line per agent that ever held a lease (in grant order), a
// rollup per kind, and the requests still waiting.
type BudgetSnapshot struct {
	V           int                         `json:"v"`
	Run         string                      `json:"run"`
	Time        time.Time                   `json:"time"`
	Limits      BudgetLimits                `json:"limits"`
	Used        BudgetUsage                 `json:"used"`
	Reserved    int64                       `json:"reserved"`
	Available   int64                       `json:"available"`
	Slots       int                         `json:"slots"`
	KindSlots   map[string]int              `json:"kind_slots,omitempty"`
	Waiting     int                         `json:"waiting"`
	Exhausted   bool                        `json:"exhausted"`
	ExhaustedBy string                      `json:"exhausted_by,omitempty"`
	Agents      []BudgetAgent               `json:"agents"`
	ByKind      map[string]BudgetKindTotals `json:"by_kind"`
}

// BudgetAcquired is the data of a budget.acquired event.
type BudgetAcquired struct {
	Agent    string  `json:"agent"`
	Parent   string  `json:"parent,omitempty"`
	Kind     string  `json:"kind"`
	Tokens   int64   `json:"tokens"`
	USD      float64 `json:"usd,omitempty"`
	WaitedMS int64   `json:"waited_ms"`
}

// BudgetWaiting is the data of a budget.waiting event: the acquire is queued
// at Position (1 = next in line) because of Reason (BudgetWaitTokens or
// BudgetWaitSlots); Pool names what it waits for ("run", a parent agent's ID,
// "slots" or "slots:<kind>").
type BudgetWaiting struct {
	Agent    string `json:"agent"`
	Kind     string `json:"kind"`
	Position int    `json:"position"`
	Reason   string `json:"reason"`
	Pool     string `json:"pool"`
}

// BudgetReleased is the data of a budget.released event: what the agent
// used and how many reserved tokens went back to its parent's pool.
type BudgetReleased struct {
	Agent    string      `json:"agent"`
	Used     BudgetUsage `json:"used"`
	Returned int64       `json:"returned"`
}

// BudgetAdvisory is the data of a budget.advisory event: the agent's lease
// changed state (for instance to BudgetStateExhausted) and Text was shown to it.
type BudgetAdvisory struct {
	Agent     string      `json:"agent"`
	State     BudgetState `json:"state"`
	Remaining int64       `json:"remaining"`
	Text      string      `json:"text,omitempty"`
}
