package budget

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/troupe-ai/troupe/messages"
)

// State is a lease's state; see messages.BudgetState.
type State = messages.BudgetState

// The states a Usage or TopUp reply carries.
const (
	StateOK        = messages.BudgetStateOK
	StateExhausted = messages.BudgetStateExhausted
	StateReleased  = messages.BudgetStateReleased
)

// Acquire asks for a lease before an agent starts: Estimate tokens (and
// EstimateUSD dollars when the run has a dollar limit) from the pool of
// Parent (the run's when Parent is ""), plus one concurrency slot. It is
// granted exactly or it waits, in arrival order; see the package doc.
//
// Send it with Request (or RequestWithCustomSender): the sender gets a
// *Queued notice when the request has to wait, and then exactly one *Granted.
type Acquire struct {
	Agent  string // the new agent's ID, unique in the run
	Parent string // the parent agent's ID; "" for the run's root agent
	Kind   string // the agent kind (root, explore, planner, worker, ...)
	// Estimate is the number of tokens to reserve, > 0.
	Estimate int64
	// EstimateUSD is the dollars to reserve when the run has a USD limit;
	// zero reserves the run's average share, Estimate × USD / Tokens.
	EstimateUSD float64
	// Deadline bounds the wait; zero uses Limits.AcquireTimeout.
	Deadline time.Time
	// Holder is the actor that owns the lease (nil: none). The budget
	// actor watches it: when it terminates, the lease and its descendants'
	// leases are released.
	Holder *actor.PID
}

// Queued tells an acquirer that its request waits: Position in line (1 =
// next), Reason (messages.BudgetWaitTokens or BudgetWaitSlots) and the Pool
// it waits for. It is sent at most once per request.
type Queued struct {
	Agent    string
	Ticket   uint64
	Position int
	Reason   string
	Pool     string
}

// Wire converts q to the data of a budget.waiting event.
func (q Queued) Wire(kind string) messages.BudgetWaiting {
	return messages.BudgetWaiting{Agent: q.Agent, Kind: kind, Position: q.Position, Reason: q.Reason, Pool: q.Pool}
}

// Lease is a granted reservation.
type Lease struct {
	Agent  string
	Parent string
	Kind   string
	Tokens int64   // tokens reserved
	USD    float64 // dollars reserved (0 when the run has no dollar limit)
	Ticket uint64  // arrival order of the request in the run, from 1
	Order  uint64  // grant order in the run, from 1
	Waited time.Duration
}

// Wire converts l to the data of a budget.acquired event.
func (l Lease) Wire() messages.BudgetAcquired {
	return messages.BudgetAcquired{Agent: l.Agent, Parent: l.Parent, Kind: l.Kind,
		Tokens: l.Tokens, USD: l.USD, WaitedMS: l.Waited.Milliseconds()}
}

// Granted is the final answer to an Acquire: a lease, or Err (never both).
type Granted struct {
	Lease Lease
	Err   error
}

// Usage charges an agent's lease after a model response or a tool batch.
// The reply is a *UsageReply.
type Usage struct {
	Agent     string
	Tokens    int64
	Cost      float64 // dollars
	ToolCalls int64
	// TopUp, when > 0, asks for up to TopUp more tokens from the parent's
	// pool if this charge uses the lease up, before answering.
	TopUp int64
}

// UsageReply answers Usage (and TopUp): the lease's State after the charge,
// the tokens it has Remaining for its own use and new children (its grant
// minus what it used minus what its live children hold), its Used tokens
// so far, its Granted total, the tokens its live children hold (Lent: their
// unused part comes back when they end) and the tokens a top-up added
// (ToppedUp).
type UsageReply struct {
	State     State
	Remaining int64
	Used      int64
	Granted   int64
	Lent      int64
	ToppedUp  int64
	Err       error
}

// TopUp asks for up to Want more tokens for an agent's lease from its
// parent's pool (the run's for the root). It is granted in part or in full
// at once, or not at all (ToppedUp 0): it never waits, and never takes what
// queued acquires of that pool are waiting for. The reply is a *UsageReply.
type TopUp struct {
	Agent   string
	Want    int64
	WantUSD float64 // with a USD limit; 0 = the run's average share
}

// Release ends an agent's lease: Used (its own token total, if larger than
// what Usage reported) is charged, its children's leases are released
// first, the unused reservation returns to the parent's pool and the slot
// is freed. Releasing an agent whose acquire still waits withdraws it.
// Releasing twice is harmless. The reply is a *Released.
type Release struct {
	Agent string
	Used  int64
}

// Released answers Release. Already reports that an earlier Release for
// the agent was handled (and then Returned is 0). A lease that ended on its
// own first (its holder died, or an ancestor was released) reports Already
// false on its first Release, with what it returned then, so the agent
// still emits its budget.released event whichever came first.
type Released struct {
	Agent    string
	Used     messages.BudgetUsage
	Returned int64 // reserved tokens given back to the parent's pool
	Already  bool
	Err      error
}

// Wire converts r to the data of a budget.released event.
func (r Released) Wire() messages.BudgetReleased {
	return messages.BudgetReleased{Agent: r.Agent, Used: r.Used, Returned: r.Returned}
}

// GetSnapshot asks for a messages.BudgetSnapshot; the reply is a
// *messages.BudgetSnapshot.
type GetSnapshot struct{}
