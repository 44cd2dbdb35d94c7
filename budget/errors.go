package budget

import "errors"

// Sentinel errors of the budget actor. Replies wrap them with detail
// (fmt.Errorf("...: %w", ErrX)); test with errors.Is.
var (
	// ErrBudgetExhausted: the run hit one of its limits (tokens, dollars,
	// tool calls or wall time); nothing more is granted.
	ErrBudgetExhausted = errors.New("budget: exhausted")
	// ErrAcquireTimeout: a queued acquire reached its deadline before it
	// could be granted. Nothing stays reserved for it.
	ErrAcquireTimeout = errors.New("budget: acquire timed out")
	// ErrUnknownAgent: no lease (and no queued acquire) has this agent ID.
	ErrUnknownAgent = errors.New("budget: unknown agent")
	// ErrLimitExceeded: an estimate is larger than the pool it draws from
	// could ever supply, or a kind is capped at zero agents, so it would
	// wait forever; it fails at once instead.
	ErrLimitExceeded = errors.New("budget: estimate exceeds the pool")
	// ErrDuplicateAgent: the agent ID already has (or had) a lease or a
	// queued acquire. Agent IDs are unique within a run.
	ErrDuplicateAgent = errors.New("budget: agent already has a lease")
	// ErrReleased: the lease (or the parent lease a request draws from)
	// was already released.
	ErrReleased = errors.New("budget: lease released")
	// ErrInvalidRequest: a request or a Limits value is malformed; the
	// wrapped message names the field.
	ErrInvalidRequest = errors.New("budget: invalid request")
	// ErrWithdrawn: a queued acquire was withdrawn (its context was
	// cancelled or the agent was released before it was granted).
	ErrWithdrawn = errors.New("budget: acquire withdrawn")
	// ErrStopped: the budget actor stopped (or is not running).
	ErrStopped = errors.New("budget: actor stopped")
	// ErrUnreachable: the run's budget service did not answer within the
	// client's bound (a remote agent whose orchestrator died); the agent
	// makes no further model call.
	ErrUnreachable = errors.New("budget: service unreachable")
)
