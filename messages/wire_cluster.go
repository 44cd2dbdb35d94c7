package messages

import (
	"fmt"
	"time"
)

// NodeInfo is a node's entry in the node registry (the KV bucket of live
// nodes, key = the node's ID), rewritten at every heartbeat; the bucket's
// TTL removes the entry of a node that stopped beating.
type NodeInfo struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Host      string    `json:"host"`
	Kinds     []string  `json:"kinds"`
	Slots     int       `json:"slots"`
	Free      int       `json:"free"`
	Version   string    `json:"version"`
	Protocol  int       `json:"protocol"`
	Workspace string    `json:"workspace,omitempty"` // the identity of the node's checkout
	Started   time.Time `json:"started"`
	Heartbeat time.Time `json:"heartbeat"`
	Draining  bool      `json:"draining,omitempty"`
	// BeatMS is the node's heartbeat period in milliseconds: an
	// orchestrator counts the node lost after two periods without an
	// entry (0: an older node; the orchestrator's own lease timeout).
	BeatMS int64 `json:"beat_ms,omitempty"`
}

// RunLease is a run's entry in the runs bucket (<prefix>_runs, key: the
// run ID). The run's orchestrator writes it when the run starts and
// rewrites it every quarter of the lease; it deletes it when the run
// ends. An entry not rewritten for LeaseMS means the orchestrator is
// gone: nodes stop the run's agents, and watchers show the run lost.
type RunLease struct {
	Run       string    `json:"run"`
	Origin    string    `json:"origin,omitempty"` // host/pid of the orchestrator
	LeaseMS   int64     `json:"lease_ms"`
	Heartbeat time.Time `json:"heartbeat"`
}

// Validate checks a runs bucket entry.
func (l *RunLease) Validate() error {
	if err := checkID("run", l.Run); err != nil {
		return err
	}
	if l.LeaseMS <= 0 {
		return fmt.Errorf("%w: run %s: lease must be positive", ErrBadMessage, l.Run)
	}
	return nil
}

// Validate checks a registry entry read from the bucket.
func (n *NodeInfo) Validate() error {
	if err := checkID("node", n.ID); err != nil {
		return err
	}
	if n.Slots < 0 || n.Free < 0 {
		return fmt.Errorf("%w: node %s: negative slots", ErrBadMessage, n.ID)
	}
	return nil
}

// StartNotice is what a node publishes on <prefix>.ctl.<run>.<agent>.started
// when it takes a task (Refused empty) or refuses it (Refused says why),
// so the orchestrator knows where the task ran and, should it fail for
// good, can say what became of each attempt. A node that gave a task up
// (cut off from the server, it stopped the task's agent, no result, no
// ack) says so once it is back, with Released: if it still held the
// task's current delivery, the run queues the task again at once.
type StartNotice struct {
	Node     string `json:"node"`
	Name     string `json:"name,omitempty"`
	Attempt  int    `json:"attempt"`
	Refused  string `json:"refused,omitempty"`
	Released string `json:"released,omitempty"`
}

// Validate checks a start notice.
func (s *StartNotice) Validate() error { return checkID("node", s.Node) }

// StartReply is the run's answer to a start notice sent as a request:
// the notice arrived (a node sends it again until it has an answer), and,
// for a start, whether the delivery is the task's to run. Mine false
// means the run no longer counts on this delivery (it queued the task
// again, took another delivery, or got its result): the node drops it,
// unrun and unsettled. Why says why.
type StartReply struct {
	V    int    `json:"v"`
	Mine bool   `json:"mine"`
	Why  string `json:"why,omitempty"`
}

// Validate checks a start reply.
func (s *StartReply) Validate() error { return checkVersion("start reply", s.V) }

// ErrorReply is the reply to a request that could not be read (its
// operation unknown, its bytes not JSON, another version): only an error.
type ErrorReply struct {
	V     int    `json:"v"`
	Error *Error `json:"error"`
}

// Validate checks an error reply.
func (r *ErrorReply) Validate() error {
	if r.Error == nil || r.Error.Code == "" {
		return fmt.Errorf("%w: error reply without an error", ErrBadMessage)
	}
	return nil
}

// TaskAdvisory is the part troupe reads of the JetStream advisories about
// a task on the queue ($JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>
// and ...MSG_TERMINATED...): the server writes them, not troupe, so they
// carry no protocol version.
type TaskAdvisory struct {
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries int    `json:"deliveries"`
	Reason     string `json:"reason,omitempty"`
}
