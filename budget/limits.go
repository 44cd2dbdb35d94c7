package budget

import (
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// WrapUpAdvisory is the text an agent loop shows the model when its lease is
// exhausted: one final round, then the agent ends with budget_exhausted.
const WrapUpAdvisory = "[Budget: this agent's token budget is exhausted. This is your final round: answer now with what you have.]"

// nanoPerUSD converts dollars to the integer nano-dollars the ledger keeps,
// so that sums are exact.
const nanoPerUSD = 1e9

// Limits are one run's budget. Tokens is required; every other limit is off
// when zero.
type Limits struct {
	// Tokens is the run's total token budget (prompt + completion), > 0.
	Tokens int64
	// USD caps the run's cost in dollars. When set, leases reserve dollars
	// as well as tokens.
	USD float64
	// ToolCalls caps the number of tool calls of the whole run.
	ToolCalls int64
	// WallTime caps the run's duration, counted from Spawn.
	WallTime time.Duration
	// MaxConcurrent caps the number of live leases (every agent, the root
	// included, holds one slot while it runs).
	MaxConcurrent int
	// PerKind caps the number of live leases of one kind, e.g. explore 8,
	// worker 2. Kinds not listed are not capped.
	PerKind map[string]int
	// AcquireTimeout is the default deadline of an acquire that sets none.
	// Zero: such an acquire waits until granted or withdrawn.
	AcquireTimeout time.Duration
}

// Validate reports the first problem with l, naming the field.
func (l Limits) Validate() error {
	switch {
	case l.Tokens <= 0:
		return fmt.Errorf("%w: Limits.Tokens must be > 0 (the run's token budget), got %d", ErrInvalidRequest, l.Tokens)
	case l.USD < 0 || math.IsNaN(l.USD) || math.IsInf(l.USD, 0):
		return fmt.Errorf("%w: Limits.USD must be >= 0 (0 = no dollar limit), got %v", ErrInvalidRequest, l.USD)
	case l.USD*nanoPerUSD > math.MaxInt64/4:
		return fmt.Errorf("%w: Limits.USD is too large (%v)", ErrInvalidRequest, l.USD)
	case l.ToolCalls < 0:
		return fmt.Errorf("%w: Limits.ToolCalls must be >= 0 (0 = no limit), got %d", ErrInvalidRequest, l.ToolCalls)
	case l.WallTime < 0:
		return fmt.Errorf("%w: Limits.WallTime must be >= 0 (0 = no limit), got %v", ErrInvalidRequest, l.WallTime)
	case l.MaxConcurrent < 0:
		return fmt.Errorf("%w: Limits.MaxConcurrent must be >= 0 (0 = no limit), got %d", ErrInvalidRequest, l.MaxConcurrent)
	case l.AcquireTimeout < 0:
		return fmt.Errorf("%w: Limits.AcquireTimeout must be >= 0 (0 = wait until granted), got %v", ErrInvalidRequest, l.AcquireTimeout)
	}
	for kind, n := range l.PerKind {
		if kind == "" || n < 0 {
			return fmt.Errorf("%w: Limits.PerKind[%q] must name a kind and be >= 0, got %d", ErrInvalidRequest, kind, n)
		}
	}
	return nil
}

// kindCap is the slot cap of kind, 0 when it has none. A kind listed with 0
// is capped at zero agents.
func (l Limits) kindCap(kind string) (int, bool) {
	n, ok := l.PerKind[kind]
	return n, ok
}

// wire converts l to its snapshot form.
func (l Limits) wire() messages.BudgetLimits {
	return messages.BudgetLimits{Tokens: l.Tokens, USD: l.USD, ToolCalls: l.ToolCalls,
		WallTimeMS: l.WallTime.Milliseconds(), MaxConcurrent: l.MaxConcurrent,
		PerKind: maps.Clone(l.PerKind)}
}

// toNano converts dollars to nano-dollars, rounding to the nearest.
func toNano(usd float64) int64 { return int64(math.Round(usd * nanoPerUSD)) }

// toUSD converts nano-dollars to dollars.
func toUSD(nano int64) float64 { return float64(nano) / nanoPerUSD }
