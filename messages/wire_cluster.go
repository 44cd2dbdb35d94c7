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
// good, can say what became of each attempt.
type StartNotice struct {
	Node    string `json:"node"`
	Name    string `json:"name,omitempty"`
	Attempt int    `json:"attempt"`
	Refused string `json:"refused,omitempty"`
}

// Validate checks a start notice.
func (s *StartNotice) Validate() error { return checkID("node", s.Node) }

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
