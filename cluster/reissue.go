package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// Failure detection. A node rewrites its registry entry every heartbeat;
// the run counts a node silent for two heartbeats as lost, and hands the
// tasks the node holds to the other nodes at once: the copy the node
// pulled is deleted from the queue and the task is queued again under a
// new secret. Whatever the lost node still sends for it does not prove
// the new secret and is refused; a node that was only slow is told to
// stop its copy (a cancel naming it), and one cut off from the server
// finds, when it is back, that its task is no longer in the queue
// (node_claims.go). AckWait stays the fallback for a node lost before it
// said it took a task.
const (
	// DefaultHeartbeat is a node's registry refresh period.
	DefaultHeartbeat = 2 * time.Second
	// DefaultAckWait is how long a task may go without a progress ack
	// before the queue delivers it again.
	DefaultAckWait = 10 * time.Second
	// ReplicatedAckWait is DefaultAckWait when the task queue has
	// replicas: when the server leading the queue's consumer is lost, the
	// new leader is elected 4 to 9 s later and counts the time since the
	// last progress ack it knows of, which may be a third of AckWait
	// before; with 10 s it would hand running tasks to other nodes.
	ReplicatedAckWait = 30 * time.Second
	// legacyLeaseTimeout is how long a node that does not say its
	// heartbeat period (an older node) may stay silent.
	legacyLeaseTimeout = 30 * time.Second
	// sweepEvery is how often the run looks for silent nodes.
	sweepEvery = 250 * time.Millisecond
)

// publish queues the task (again, after a reissue) and records its
// stream sequence.
func (c *remoteChild) publish(ctx context.Context) (uint64, error) {
	r := c.r
	r.publishing.RLock()
	defer r.publishing.RUnlock()
	c.mu.Lock()
	task := c.task
	task.V, task.Origin, task.Workspace = messages.ProtocolVersion, r.origin, r.wsKey
	task.Secret, task.Prior, task.RunLeaseMS = c.secret, c.prior, r.o.RunLease.Milliseconds()
	task.LostMS, task.Claims = r.o.LeaseTimeout.Milliseconds(), true
	id := c.task.Run + "." + c.task.ID + "." + r.life // this life's (remote.go)
	if c.prior > 0 {
		id += ".p" + strconv.Itoa(c.prior) // a new message, not a duplicate of the first
	}
	if c.requeued > 0 { // queued again with no attempt started (a lost delivery): new too
		id += ".r" + strconv.Itoa(c.requeued)
	}
	c.mu.Unlock()
	data, err := json.Marshal(task)
	if err != nil {
		return 0, err
	}
	rec := taskRecord{Agent: task.ID, Kind: task.Kind, Secret: task.Secret, Prior: task.Prior, Snapshot: task.Snapshot}
	if err := r.recs.add(rec); err != nil {
		return 0, err
	}
	h := nats.Header{jetstream.MsgIDHeader: []string{id}}
	for k, v := range c.header { // the parent's trace context
		h[k] = v
	}
	// Sent again across a lost server or an election, with the same ID:
	// the queue holds it once.
	ack, err := publishRetried(ctx, r.o.Bus, r.o.Log, "queue task "+c.task.ID,
		&nats.Msg{Subject: TaskSubject(r.o.Bus.Prefix(), c.task.Kind, messages.ProtocolVersion), Data: data, Header: h})
	if err != nil {
		return 0, fmt.Errorf("queue %s task %s: %w", c.task.Kind, c.task.ID, err)
	}
	rec.Seq = ack.Sequence
	if err := r.recs.add(rec); err != nil {
		r.o.Log.Warn().Err(err).Msg("record a queued task")
	}
	c.mu.Lock()
	c.seq, c.orphan = ack.Sequence, false
	c.mu.Unlock()
	r.mu.Lock()
	r.bySeq[ack.Sequence] = c.task.ID
	r.mu.Unlock()
	return ack.Sequence, nil
}

// queued is the task's stream sequence in the queue.
func (c *remoteChild) queued() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seq
}

// ReissueAll queues every task the run waits for again, under new
// secrets: the run's lease lapsed while this process was cut off from the
// server, so the nodes have dropped them. (Pass it to RunLease.OnRegain.)
func (r *Remote) ReissueAll() {
	r.mu.Lock()
	all := slices.Collect(maps.Values(r.waiting))
	r.mu.Unlock()
	for _, c := range all {
		c.reissue(anyNode)
	}
}

// anyNode asks reissue to take the task from whichever node holds it.
const anyNode = "\x00any"

// reissue hands the task that lost (a node found silent) holds to the
// other nodes: under a new secret, as a new message, its attempts
// counted on from the lost node's.
func (c *remoteChild) reissue(lost string) {
	r := c.r
	r.mu.Lock()
	if r.waiting[c.task.ID] != c { // its result came in meanwhile
		r.mu.Unlock()
		return
	}
	c.mu.Lock()
	if c.cancelled || c.node != lost && lost != anyNode {
		c.mu.Unlock()
		r.mu.Unlock()
		return
	}
	old, holder, held := c.seq, c.node, c.attempt
	c.node, c.secret, c.orphan = "", newSecret(), true
	c.heard, c.delivered = false, time.Time{}
	c.requeued++
	c.prior = max(c.prior, c.attempt)
	c.attempt = 0
	c.mu.Unlock()
	delete(r.bySeq, old)
	r.mu.Unlock()
	r.reissued.Add(1)
	r.deleteTask(old)
	if holder != "" {
		c.revoke(holder, held, "the node was lost (no heartbeat), or the run's lease lapsed, and the task was queued again")
	}
	c.requeue()
}

// requeue queues a reissued task whose queueing has not succeeded yet.
func (c *remoteChild) requeue() {
	c.mu.Lock()
	orphan := c.orphan && !c.cancelled
	c.mu.Unlock()
	if !orphan {
		return
	}
	ctx, cancel := context.WithTimeout(c.r.ctx, 5*time.Second)
	defer cancel()
	if _, err := c.publish(ctx); err != nil {
		c.r.o.Log.Warn().Err(err).Str("agent", c.task.ID).Msg("hand a lost node's task on (tried again every second)")
	}
}

// revoke tells node to stop its copy of the task's attempt, which is no
// longer its own (the cancel names the node and the attempt: other
// nodes' copies go on, and so does a later delivery the node took since).
func (c *remoteChild) revoke(node string, attempt int, why string) {
	b, _ := json.Marshal(messages.Cancel{V: messages.ProtocolVersion, Reason: "claim revoked: " + why, Node: node, Attempt: attempt})
	_ = c.r.o.Bus.NATS().Publish(bus.CtlSubject(c.r.o.Bus.Prefix(), c.task.Run, c.task.ID, ctlCancel), b)
}
