package budget

import (
	"context"

	"github.com/troupe-ai/troupe/messages"
)

// Service is what agents need of a run's budget, wherever it is served:
// the local budget actor through a Client, or the orchestrator's budget
// reached over the network by a node. Implementations are safe for
// concurrent use. Acquire.Holder is meaningful only to the local actor;
// a remote service ties leases to its caller's liveness its own way.
type Service interface {
	// Acquire reserves a lease and blocks until it is granted, fails, or
	// ctx ends; see Client.Acquire.
	Acquire(ctx context.Context, req Acquire, onQueued func(Queued)) (Lease, error)
	// Usage charges an agent's lease.
	Usage(ctx context.Context, u Usage) (UsageReply, error)
	// Release ends an agent's lease.
	Release(ctx context.Context, rel Release) (Released, error)
	// Snapshot returns the run's budget as it stands.
	Snapshot(ctx context.Context) (messages.BudgetSnapshot, error)
}

var _ Service = (*Client)(nil)
