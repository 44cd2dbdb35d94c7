// Package budget is troupe's token-budget semaphore: one protoactor actor
// per run that every agent of the run draws from, keeping a hierarchical
// ledger of tokens, dollars, tool calls and concurrency slots.
//
// # Leases and pools
//
// Before an agent starts, its parent sends Acquire with an Estimate of the
// tokens it will need. The run's root agent (Parent "") draws from the
// run's Limits; every other agent draws from its parent's lease. Each lease
// is a pool in its own right: what is available in it is its grant minus
// what it consumed minus what its live children hold. A sub-tree can thus
// never reserve more than was granted to its root. With a dollar limit,
// leases reserve dollars the same way (EstimateUSD, or the run's average
// price per token). Every live lease also holds one concurrency slot, of
// the global MaxConcurrent and of its kind's cap in PerKind; a tree d
// levels deep needs d slots, so set the caps with nesting in mind.
//
// An acquire is granted exactly as asked or it waits; it is never cut
// down. An estimate larger than its pool could ever supply fails at once
// with ErrLimitExceeded instead of waiting forever.
//
// # Waiting: first come, first served
//
// Requests that cannot be served wait in arrival order and are told so
// (Queued: position, reason tokens or slots) so the agent can emit a
// budget.waiting event. While a request waits, no later request may take
// from a pool it is short of (its parent's tokens, the global slots, its
// kind's slots): a small later request cannot overtake a large earlier one
// for the same pool, so nobody starves. Pools it is not short of stay open,
// so a request waiting on one sub-tree never holds up an unrelated one
// (which would deadlock nested delegation). Top-ups never take what the
// requests waiting on a pool need. Waiting is not an error: a request
// fails only when its Deadline (or Limits.AcquireTimeout) passes
// (ErrAcquireTimeout), when it is withdrawn (a Release for the agent, or a
// cancelled context in Client.Acquire; ErrWithdrawn), when the pool it
// waits on is released (ErrReleased) or when the run is exhausted. A
// failed or withdrawn request leaves nothing reserved.
//
// # Spending
//
// After every model response or tool batch the agent reports Usage; it is
// charged to its lease (and so to the sub-trees of all its ancestors). The
// reply says StateOK, or StateExhausted when the lease is used up and no
// top-up could be had (Usage.TopUp or a TopUp message asks the parent's
// pool for more, granted in part, in full, or not at all, never waiting).
// An exhausted agent gets WrapUpAdvisory for one final round and then ends
// with budget_exhausted. A response can overshoot a lease (its size is
// known only afterwards): an agent passes its grant by at most the response
// that used it up plus its wrap-up round, and the excess is taken from the
// parent's pool at once (and from the run's, up the tree), so it shrinks
// what others can reserve. When the run's real usage reaches its tokens,
// dollars or tool calls, or its wall time passes, every lease answers
// StateExhausted, queued acquires fail with ErrBudgetExhausted and new
// ones are refused; the run's total then passes the limit by at most the
// responses of the agents live at that moment (in flight plus wrap-up).
//
// # Ending and death
//
// Release ends a lease: its live descendants are released first, what the
// agent consumed stays consumed, the rest of its reservation returns to
// its parent's pool, its slot is freed and waiting requests are served.
// Releasing twice is harmless. The actor watches each lease's Holder (set
// in Acquire): when that actor terminates without releasing, its leases
// and their descendants come back the same way.
//
// # Use
//
// Spawn starts the actor of a run and Stop ends it. Actors can Request the
// messages directly (the replies go to the sender; Respond in protoactor
// has no sender, so keep your own PIDs); everything else uses a Client,
// which blocks in Acquire until granted. The actor never waits inside its
// Receive. Snapshot reports every lease, the run's totals, a rollup per
// kind and per sub-tree, as the messages.BudgetSnapshot wire payload.
package budget
