package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// BudgetClient reaches a run's budget served by a BudgetServer: the
// budget.Service of agents that run on a node.
type BudgetClient struct {
	nc      *nats.Conn
	prefix  string
	run     string
	node    string
	timeout time.Duration   // how long the budget may go unanswered (node.budget_timeout)
	proof   *delivery       // the task delivery its requests prove (nil: none)
	gone    <-chan struct{} // closed once the task is no longer the node's: requests give up
}

var _ budget.Service = (*BudgetClient)(nil)

// NewBudgetClient returns a client of run's budget for the node named
// node (its leases come back if it stops heartbeating; "" for none).
func NewBudgetClient(nc *nats.Conn, prefix, run, node string) *BudgetClient {
	return &BudgetClient{nc: nc, prefix: prefix, run: run, node: node, timeout: DefaultBudgetTimeout}
}

// DefaultBudgetTimeout is how long a node's agent waits for its run's
// budget to answer before it stops (node.budget_timeout).
const DefaultBudgetTimeout = 10 * time.Second

// withDelivery makes the client's requests prove d, the delivery of the
// task whose agents use it. It returns c.
func (c *BudgetClient) withDelivery(d *delivery) *BudgetClient {
	c.proof = d
	return c
}

// until makes the client's requests give up at once when gone is closed:
// the task is no longer the node's (its run's lease lapsed, or its claim
// was revoked or given up), and nobody may answer. It returns c.
func (c *BudgetClient) until(gone <-chan struct{}) *BudgetClient {
	c.gone = gone
	return c
}

// WithTimeout sets how long the run's budget may go unanswered (nobody
// serves it, or a request gets no reply) before a request fails with
// budget.ErrUnreachable; d <= 0 keeps the default. It returns c.
func (c *BudgetClient) WithTimeout(d time.Duration) *BudgetClient {
	if d > 0 {
		c.timeout = d
	}
	return c
}

// acquireWait bounds an acquire whose context has no deadline: the
// longest a queued acquire may wait, plus a margin.
const acquireWait = 15 * time.Minute

// Acquire asks for a lease and waits for it. The remote side does not
// report queueing, so onQueued is not called. When ctx ends first the
// request is withdrawn with a release, so nothing stays reserved.
func (c *BudgetClient) Acquire(ctx context.Context, req budget.Acquire, _ func(budget.Queued)) (budget.Lease, error) {
	w := messages.BudgetAcquireRequest{V: messages.ProtocolVersion, Agent: req.Agent, Parent: req.Parent, Kind: req.Kind,
		Estimate: req.Estimate, EstimateUSD: req.EstimateUSD, Node: c.node}
	if !req.Deadline.IsZero() {
		w.DeadlineUnixMS = req.Deadline.UnixMilli()
	}
	var r messages.BudgetAcquireReply
	rctx, cancel := withDefaultDeadline(ctx, acquireWait)
	defer cancel()
	if err := c.request(rctx, opAcquire, w, &r); err != nil {
		if ctx.Err() != nil {
			wctx, wcancel := context.WithTimeout(context.Background(), budget.DefaultRequestTimeout)
			defer wcancel()
			_, _ = c.Release(wctx, budget.Release{Agent: req.Agent})
			return budget.Lease{}, fmt.Errorf("acquire for %s: %w", req.Agent, ctx.Err())
		}
		return budget.Lease{}, err
	}
	if r.Error != nil {
		return budget.Lease{}, fmt.Errorf("acquire for %s: %w", req.Agent, fromWireError(r.Error))
	}
	if r.Grant == nil {
		return budget.Lease{}, fmt.Errorf("acquire for %s: empty reply", req.Agent)
	}
	return grantToBudget(r.Grant), nil
}

// Usage charges an agent's lease.
func (c *BudgetClient) Usage(ctx context.Context, u budget.Usage) (budget.UsageReply, error) {
	var r messages.BudgetReportReply
	ctx, cancel := withDefaultDeadline(ctx, c.timeout)
	defer cancel()
	if err := c.request(ctx, opUsage, messages.BudgetReport{V: messages.ProtocolVersion, Agent: u.Agent, Tokens: u.Tokens,
		CostUSD: u.Cost, ToolCalls: u.ToolCalls, TopUp: u.TopUp}, &r); err != nil {
		return budget.UsageReply{}, err
	}
	rep := budget.UsageReply{State: r.State, Remaining: r.Remaining, Used: r.Used, Granted: r.Granted,
		Lent: r.Lent, ToppedUp: r.ToppedUp, Err: fromWireError(r.Error)}
	return rep, rep.Err
}

// Release ends an agent's lease.
func (c *BudgetClient) Release(ctx context.Context, rel budget.Release) (budget.Released, error) {
	var r messages.BudgetReleaseReply
	ctx, cancel := withDefaultDeadline(ctx, c.timeout)
	defer cancel()
	if err := c.request(ctx, opRelease, messages.BudgetRelease{V: messages.ProtocolVersion, Agent: rel.Agent, Used: rel.Used}, &r); err != nil {
		return budget.Released{}, err
	}
	out := budget.Released{Agent: r.Agent, Used: r.Used, Returned: r.Returned, Already: r.Already, Err: fromWireError(r.Error)}
	return out, out.Err
}

// Snapshot returns the run's budget as it stands.
func (c *BudgetClient) Snapshot(ctx context.Context) (messages.BudgetSnapshot, error) {
	var r messages.BudgetSnapshotReply
	ctx, cancel := withDefaultDeadline(ctx, c.timeout)
	defer cancel()
	if err := c.request(ctx, opSnapshot, messages.BudgetSnapshotRequest{V: messages.ProtocolVersion}, &r); err != nil {
		return messages.BudgetSnapshot{}, err
	}
	if r.Error != nil {
		return messages.BudgetSnapshot{}, fromWireError(r.Error)
	}
	if r.Snapshot == nil {
		return messages.BudgetSnapshot{}, errors.New("snapshot: empty reply")
	}
	return *r.Snapshot, nil
}

// request asks the run's budget and decodes its reply. While nobody
// serves the budget it asks again, for up to the client's timeout; a
// budget that stays silent that long (no responder, or no reply to a
// usage, release or snapshot) is budget.ErrUnreachable.
func (c *BudgetClient) request(ctx context.Context, op string, req, reply any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if c.gone != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-c.gone:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	giveUp := time.Now().Add(c.timeout)
	pause := 20 * time.Millisecond
	h := c.proof.sign(nil, b)
	if h == nil {
		h = nats.Header{}
	}
	h.Set(budgetRequestHeader, newRequestID()) // every try the same request (budget_replies.go)
	var m *nats.Msg
	for {
		m, err = c.try(ctx, &nats.Msg{Subject: bus.BudgetSubject(c.prefix, c.run, op), Data: b, Header: h})
		if errors.Is(err, errTryLost) && (op == opAcquire || time.Now().Before(giveUp)) {
			continue // lost with a server, or its reply was (or an acquire waits its turn): ask again
		}
		if errors.Is(err, errTryLost) {
			err = context.DeadlineExceeded
		}
		if !errors.Is(err, nats.ErrNoResponders) {
			break
		}
		if !time.Now().Add(pause).Before(giveUp) {
			return fmt.Errorf("budget %s: %w: nobody served the budget of run %s for %s (node.budget_timeout)", op, budget.ErrUnreachable, c.run, c.timeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("budget %s: %w", op, ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) && op != opAcquire:
		return fmt.Errorf("budget %s: %w: the budget of run %s did not answer", op, budget.ErrUnreachable, c.run)
	case err != nil:
		return fmt.Errorf("budget %s: %w", op, err)
	}
	if err := json.Unmarshal(m.Data, reply); err != nil {
		return fmt.Errorf("budget %s: malformed reply: %w", op, err)
	}
	return nil
}

// errTryLost is a try of a request that got no reply within budgetTry,
// while the request as a whole may wait longer.
var errTryLost = errors.New("no reply to this try")

// try sends m once and waits for its reply for at most budgetTry (or
// until ctx ends, when that is sooner).
func (c *BudgetClient) try(ctx context.Context, m *nats.Msg) (*nats.Msg, error) {
	tctx, cancel := context.WithTimeout(ctx, budgetTry)
	defer cancel()
	r, err := c.nc.RequestMsgWithContext(tctx, m)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return nil, errTryLost
	}
	return r, err
}

// withDefaultDeadline gives ctx a deadline d from now unless it has one.
func withDefaultDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
