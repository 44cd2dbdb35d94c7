package budget

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/troupe-ai/troupe/messages"
)

// DefaultRequestTimeout bounds a client call that is answered at once
// (Usage, TopUp, Release, Snapshot) when its context has no
// earlier deadline.
const DefaultRequestTimeout = 10 * time.Second

// Client calls a budget actor from outside its mailbox: from goroutines,
// tests, the NATS front. It is safe for concurrent use. Actors may instead
// Request the messages directly and handle the replies in their Receive.
type Client struct {
	root *actor.RootContext
	pid  *actor.PID
}

// NewClient returns a client of the budget actor pid.
func NewClient(root *actor.RootContext, pid *actor.PID) *Client {
	return &Client{root: root, pid: pid}
}

// PID is the budget actor's address.
func (c *Client) PID() *actor.PID { return c.pid }

// Acquire reserves a lease and blocks until it is granted, fails, or ctx
// ends. onQueued, if not nil, is called (on this goroutine) when the
// request has to wait, so the caller can emit a budget.waiting event. When
// ctx ends first (cancelled, or its deadline passed: then the error also
// wraps ErrAcquireTimeout) the queued request is withdrawn; if it was
// granted in the meantime, the lease is released, so nothing leaks.
func (c *Client) Acquire(ctx context.Context, req Acquire, onQueued func(Queued)) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, fmt.Errorf("acquire for %s: %w", req.Agent, err)
	}
	// A throwaway inbox actor receives the Queued notice and the Granted
	// answer: a future would complete on the first of them.
	inbox := make(chan any, 4)
	box := c.root.Spawn(actor.PropsFromFunc(func(ac actor.Context) {
		switch m := ac.Message().(type) {
		case *Queued, *Granted, *Released, *actor.DeadLetterResponse:
			select {
			case inbox <- m:
			default:
			}
		}
	}))
	defer c.root.Stop(box)
	c.root.RequestWithCustomSender(c.pid, &req, box)
	for {
		select {
		case m := <-inbox:
			switch m := m.(type) {
			case *Queued:
				if onQueued != nil {
					onQueued(*m)
				}
			case *Granted:
				return m.Lease, m.Err
			case *actor.DeadLetterResponse:
				return Lease{}, fmt.Errorf("acquire for %s: %w", req.Agent, ErrStopped)
			}
		case <-ctx.Done():
			return Lease{}, c.withdraw(req.Agent, box, inbox, ctx.Err())
		}
	}
}

// withdraw takes back a queued acquire (or releases the lease if it was
// granted meanwhile) and waits for the actor to confirm both.
func (c *Client) withdraw(agent string, box *actor.PID, inbox chan any, cause error) error {
	err := fmt.Errorf("acquire for %s: %w", agent, cause)
	if errors.Is(cause, context.DeadlineExceeded) {
		err = fmt.Errorf("acquire for %s: %w (%w)", agent, ErrAcquireTimeout, cause)
	}
	c.root.RequestWithCustomSender(c.pid, &Release{Agent: agent}, box)
	timeout := time.NewTimer(DefaultRequestTimeout)
	defer timeout.Stop()
	var granted, released bool
	for !granted || !released {
		select {
		case m := <-inbox:
			switch m.(type) {
			case *Granted:
				granted = true
			case *Released:
				released = true
			case *actor.DeadLetterResponse:
				return err
			}
		case <-timeout.C:
			return fmt.Errorf("%w; the budget actor did not confirm the withdrawal within %v", err, DefaultRequestTimeout)
		}
	}
	return err
}

// Usage charges an agent's lease; see Usage and UsageReply.
func (c *Client) Usage(ctx context.Context, u Usage) (UsageReply, error) {
	r, err := request[*UsageReply](ctx, c, &u, "usage for "+u.Agent)
	if err != nil {
		return UsageReply{}, err
	}
	return *r, r.Err
}

// TopUp asks for more tokens for an agent's lease; see TopUp.
func (c *Client) TopUp(ctx context.Context, t TopUp) (UsageReply, error) {
	r, err := request[*UsageReply](ctx, c, &t, "top-up for "+t.Agent)
	if err != nil {
		return UsageReply{}, err
	}
	return *r, r.Err
}

// Release ends an agent's lease (or withdraws its queued acquire).
func (c *Client) Release(ctx context.Context, rel Release) (Released, error) {
	r, err := request[*Released](ctx, c, &rel, "release "+rel.Agent)
	if err != nil {
		return Released{}, err
	}
	return *r, r.Err
}

// Snapshot returns the run's budget as it stands.
func (c *Client) Snapshot(ctx context.Context) (messages.BudgetSnapshot, error) {
	r, err := request[*messages.BudgetSnapshot](ctx, c, &GetSnapshot{}, "snapshot")
	if err != nil {
		return messages.BudgetSnapshot{}, err
	}
	return *r, nil
}

// request sends msg with RequestFuture and waits for a reply of type T.
// The actor answers these at once; ctx bounds the wait by its deadline.
func request[T any](ctx context.Context, c *Client, msg any, what string) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, fmt.Errorf("%s: %w", what, err)
	}
	timeout := DefaultRequestTimeout
	if dl, ok := ctx.Deadline(); ok {
		if timeout = min(timeout, time.Until(dl)); timeout <= 0 {
			return zero, fmt.Errorf("%s: %w", what, context.DeadlineExceeded)
		}
	}
	res, err := c.root.RequestFuture(c.pid, msg, timeout).Result()
	switch {
	case errors.Is(err, actor.ErrDeadLetter):
		return zero, fmt.Errorf("%s: %w", what, ErrStopped)
	case errors.Is(err, actor.ErrTimeout) && ctx.Err() != nil:
		return zero, fmt.Errorf("%s: %w", what, ctx.Err())
	case err != nil:
		return zero, fmt.Errorf("%s: %w", what, err)
	}
	if _, dead := res.(*actor.DeadLetterResponse); dead {
		return zero, fmt.Errorf("%s: %w", what, ErrStopped)
	}
	r, ok := res.(T)
	if !ok {
		return zero, fmt.Errorf("%s: unexpected reply %T", what, res)
	}
	return r, nil
}
