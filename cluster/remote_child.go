package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// Control operations, the last token of <prefix>.ctl.<run>[.<agent>].<op>.
const (
	ctlCancel  = "cancel"
	ctlInput   = "input"
	ctlStatus  = "status"
	ctlStarted = "started" // a node took the task
)

// remoteChild is one child placed on the queue: its proxy actor in the
// parent drives it through the actors.RemoteChild methods.
type remoteChild struct {
	r    *Remote
	task actors.ChildTask
	done chan actors.AgentResult // the task's one result
	// header goes with the task: when tracing is on, the parent's trace
	// context (publish adds the message ID).
	header nats.Header

	mu sync.Mutex
	// secret is the task's key; its result must prove it (proof.go). A
	// reissue replaces it.
	secret   string
	seq      uint64
	node     string                 // the node that took it last
	attempt  int                    // the attempt that node started
	prior    int                    // attempts before the last reissue
	orphan   bool                   // reissued, but its queueing failed: try again
	notices  []messages.StartNotice // each node that took or refused it, in order
	heard    bool                   // a node spoke of its latest queueing (took, refused or released it)
	requeued int                    // times reissued: each queueing is a new message
	// delivered is when the run first saw its latest queueing delivered
	// with no word of a node (lost.go; zero: not seen so).
	delivered time.Time
	cancelled bool
	// relayEnded is the attempt whose relay sent its end marker
	// (relay_seal.go); guarded by r.mu.
	relayEnded int
}

// noticed records a node's start (or refusal) notice, and says whether
// the delivery it speaks of is still the task's to run. A notice of an
// attempt before the task was reissued is stale and changes nothing. A
// later attempt started on another node supersedes the earlier one's
// claim: that node (slow, not dead, or its progress acks lost) is told to
// stop its copy, and its result is refused.
func (c *remoteChild) noticed(n messages.StartNotice) (mine bool, why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n.Attempt <= c.prior && c.prior > 0 {
		return false, "the task was queued again since this delivery"
	}
	c.heard = true
	if len(c.notices) < 64 {
		c.notices = append(c.notices, n)
	}
	if n.Released != "" && n.Node == c.node && n.Attempt == c.attempt {
		// The node that holds the task gave it up: queue it again now,
		// not after AckWait (nor never, had the server lost its queue).
		go c.reissue(n.Node)
		return false, ""
	}
	if n.Refused != "" || n.Released != "" {
		return false, ""
	}
	if n.Attempt < c.attempt {
		return false, fmt.Sprintf("a later delivery of the task (attempt %d) runs on node %s", c.attempt, c.node)
	}
	if was, held := c.node, c.attempt; was != "" && was != n.Node {
		go c.revoke(was, held, fmt.Sprintf("the task was delivered again, to node %s (attempt %d)", n.Node, n.Attempt))
	}
	c.node, c.attempt = n.Node, n.Attempt
	return true, ""
}

// sent is the snapshot the run sent the task (nil: none).
func (c *remoteChild) sent() *messages.TaskSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.task.Snapshot
}

// holder is the node that took the task last ("" while queued).
func (c *remoteChild) holder() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.node
}

// current checks that a proven message of the delivery (attempt, node)
// speaks for the task's current delivery: not for one that an announced
// later delivery replaced.
func (c *remoteChild) current(attempt int, node string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if attempt < c.attempt || attempt == c.attempt && node != c.node {
		return fmt.Errorf("%w: attempt %d on %s, and the task is now attempt %d on %s", ErrStaleDelivery, attempt, node, c.attempt, c.node)
	}
	return nil
}

// verifyKey checks that data proves the key of the delivery its headers
// name.
func (c *remoteChild) verifyKey(h nats.Header, data []byte) error {
	attempt, node := signedBy(h)
	c.mu.Lock()
	secret := c.secret // a reissue replaces it
	c.mu.Unlock()
	if attempt < 1 || node == "" || !proven(deliveryKey(secret, attempt, node), data, h.Get(proofHeader)) {
		return fmt.Errorf("%w: no proof of task %s's secret for attempt %d on %q", ErrUnproven, c.task.ID, attempt, node)
	}
	return nil
}

// verify checks that data proves the task's current delivery.
func (c *remoteChild) verify(h nats.Header, data []byte) error {
	if err := c.verifyKey(h, data); err != nil {
		return err
	}
	return c.current(signedBy(h))
}

// gaveUp says why the task failed after deliveries attempts, from what
// the nodes said of each: which took it and stopped before its end (a
// node killed, disconnected, or drained past its timeout), which refused
// it and why, and how many attempts no node spoke of.
func (c *remoteChild) gaveUp(deliveries int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var took, refused []string
	for _, n := range c.notices {
		who := n.Node
		if n.Name != "" && n.Name != n.Node {
			who = n.Name + " (" + n.Node + ")"
		}
		if n.Refused != "" {
			refused = append(refused, fmt.Sprintf("attempt %d refused: %s", n.Attempt, n.Refused))
		} else {
			took = append(took, fmt.Sprintf("attempt %d on node %s", n.Attempt, who))
		}
	}
	msg := fmt.Sprintf("task %s failed after %d delivery attempts", c.task.ID, deliveries)
	var parts []string
	if len(took) > 0 {
		parts = append(parts, strings.Join(took, ", ")+" started and ended without a result (the node was killed, lost its connection or handed the task back)")
	}
	parts = append(parts, refused...)
	if silent := deliveries - len(c.notices); silent > 0 {
		parts = append(parts, fmt.Sprintf("%d attempt(s) were never started: the node that received the task stopped or lost its connection first", silent))
	}
	return msg + ": " + strings.Join(parts, "; ")
}

// Start publishes the task and waits for its result. When ctx ends the
// agent is cancelled on its node and its own (cancelled) result awaited
// for a while.
func (c *remoteChild) Start(ctx context.Context) (actors.AgentResult, error) {
	r := c.r
	r.mu.Lock()
	r.waiting[c.task.ID] = c
	r.mu.Unlock()
	if res, ok := c.reattach(ctx); ok {
		r.mu.Lock()
		delete(r.waiting, c.task.ID)
		r.mu.Unlock()
		return r.receive(ctx, c.task.ID, c.sent(), res), nil
	}
	if r.snaps != nil {
		task := c.task
		if err := r.snaps.attach(ctx, &task); err != nil {
			r.mu.Lock()
			delete(r.waiting, c.task.ID)
			r.mu.Unlock()
			return actors.AgentResult{Status: actors.StatusFailed, Reason: actors.ReasonError, Err: err.Error()}, nil
		}
		c.mu.Lock()
		c.task.Snapshot = task.Snapshot
		c.mu.Unlock()
	}
	if _, err := c.publish(ctx); err != nil {
		r.mu.Lock()
		delete(r.waiting, c.task.ID)
		r.mu.Unlock()
		return actors.AgentResult{}, err
	}
	defer func() { r.forget(c, c.queued()) }()
	check := time.NewTicker(min(time.Second, r.o.PlacementTimeout/4))
	defer check.Stop()
	nobodySince := time.Time{} // since when no live node serves the kind (zero: one does)
	for {
		select {
		case res := <-c.done:
			return r.receive(ctx, c.task.ID, c.sent(), res), nil
		case <-ctx.Done():
			c.Cancel("parent cancelled")
			return c.awaitCancelled(), nil
		case <-r.ctx.Done():
			return actors.AgentResult{Status: actors.StatusFailed, Reason: actors.ReasonError,
				Err: "the orchestrator stopped waiting for the remote agent"}, nil
		case now := <-check.C:
			c.requeue()
			if res, failed := c.unplaced(now, &nobodySince); failed {
				return res, nil
			}
		}
	}
}

// unplaced fails a task no node has started while no live node serves its
// kind for the placement timeout: it is taken off the queue, so it never
// runs later.
func (c *remoteChild) unplaced(now time.Time, nobodySince *time.Time) (actors.AgentResult, bool) {
	c.mu.Lock()
	started, seq := c.node != "", c.seq
	c.mu.Unlock()
	if started || c.r.nodes.serves(c.task.Kind) {
		*nobodySince = time.Time{}
		return actors.AgentResult{}, false
	}
	if nobodySince.IsZero() {
		*nobodySince = now
	}
	if now.Sub(*nobodySince) < c.r.o.PlacementTimeout {
		return actors.AgentResult{}, false
	}
	c.r.deleteTask(seq)
	c.r.unplaced.Add(1)
	return actors.AgentResult{Status: actors.StatusFailed, Reason: actors.ReasonError,
		Err: fmt.Sprintf("no live node serves kind %q: the task waited %s (node.placement_timeout) and no node started it; start a node with --kinds %s or place %s locally",
			c.task.Kind, c.r.o.PlacementTimeout, c.task.Kind, c.task.Kind)}, true
}

// awaitCancelled waits a while for a cancelled agent's own result (its
// best text so far), else reports it cancelled.
func (c *remoteChild) awaitCancelled() actors.AgentResult {
	t := time.NewTimer(c.r.o.CancelWait)
	defer t.Stop()
	c.mu.Lock()
	node := c.node
	c.mu.Unlock()
	if node != "" {
		select {
		case res := <-c.done:
			return res
		case <-t.C:
		}
	}
	c.r.mu.Lock()
	delete(c.r.waiting, c.task.ID)
	c.r.mu.Unlock()
	// The node that took it tells the agent's end in its own events.
	return actors.AgentResult{Status: actors.StatusCancelled, Reason: actors.ReasonCancelled, Node: node}
}

// Cancel takes the task off the queue if no node has it yet, and tells
// the node running it to cancel the agent.
func (c *remoteChild) Cancel(reason string) {
	c.mu.Lock()
	seq, already := c.seq, c.cancelled
	c.cancelled = true
	c.mu.Unlock()
	if already {
		return
	}
	if seq > 0 {
		c.r.deleteTask(seq) // a task still queued is never handed out
	}
	b, _ := json.Marshal(messages.Cancel{V: messages.ProtocolVersion, Reason: reason})
	_ = c.r.o.Bus.NATS().Publish(bus.CtlSubject(c.r.o.Bus.Prefix(), c.task.Run, c.task.ID, ctlCancel), b)
}

// Status asks the node running the agent; a task still queued reports
// round 0.
func (c *remoteChild) Status(ctx context.Context) (actors.StatusReply, error) {
	st := actors.StatusReply{Agent: c.task.ID, Kind: c.task.Kind, Model: c.task.Model}
	m, err := c.r.o.Bus.NATS().RequestWithContext(ctx, bus.CtlSubject(c.r.o.Bus.Prefix(), c.task.Run, c.task.ID, ctlStatus), nil)
	if err != nil {
		return st, nil // queued, or its node is gone: what we know
	}
	w, err := messages.Decode[messages.Status](m.Data, maxRequestBytes)
	if err != nil {
		return st, fmt.Errorf("status of %s: %w", c.task.ID, err)
	}
	return actors.StatusFromWire(w), nil
}

// SendInput steers the remote agent.
func (c *remoteChild) SendInput(ctx context.Context, message string) (bool, error) {
	b, _ := json.Marshal(messages.Steer{V: messages.ProtocolVersion, Message: message})
	m, err := c.r.o.Bus.NATS().RequestWithContext(ctx, bus.CtlSubject(c.r.o.Bus.Prefix(), c.task.Run, c.task.ID, ctlInput), b)
	if err != nil {
		return false, fmt.Errorf("steer %s: %w", c.task.ID, err)
	}
	rep, err := messages.Decode[messages.SteerReply](m.Data, maxRequestBytes)
	if err != nil {
		return false, fmt.Errorf("steer %s: %w", c.task.ID, err)
	}
	if rep.Error != nil {
		return false, fmt.Errorf("steer %s: %s", c.task.ID, rep.Error.Message)
	}
	return rep.Accepted, nil
}
