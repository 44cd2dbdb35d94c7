package messages

import "fmt"

// Events from nodes. A node does not publish its agents' events on the
// events subjects (its credentials do not allow it): it sends them to the
// run's requester, a batch at a time, on <prefix>.ctl.<run>.<agent>.events
// (agent: the task's agent), as a request proving the task's delivery.
// The requester checks the proof and every event (of its run, from the
// delivery's node, about the task's agent or an agent the task's agents
// started) and publishes those it vouches for; the rest it refuses and
// counts.

// MaxEventBatch bounds the events of one EventBatch.
const MaxEventBatch = 1024

// EventBatch is a node's batch of one task's events, in the order they
// were emitted.
type EventBatch struct {
	V      int     `json:"v"`
	Events []Event `json:"events"`
}

// Validate checks a batch's version and size; its events are checked one
// by one by the requester (one bad event does not refuse the others).
func (b *EventBatch) Validate() error {
	if err := checkVersion("event batch", b.V); err != nil {
		return err
	}
	if len(b.Events) == 0 || len(b.Events) > MaxEventBatch {
		return fmt.Errorf("%w: event batch of %d events (want 1 to %d)", ErrBadMessage, len(b.Events), MaxEventBatch)
	}
	return nil
}

// EventBatchReply is the requester's answer to an EventBatch: how many of
// its events it published and how many it refused, or why it refused the
// batch as a whole.
type EventBatchReply struct {
	V        int    `json:"v"`
	Accepted int    `json:"accepted"`
	Refused  int    `json:"refused,omitempty"`
	Error    *Error `json:"error,omitempty"`
}

// Validate checks a batch reply.
func (r *EventBatchReply) Validate() error {
	if err := checkVersion("event batch reply", r.V); err != nil {
		return err
	}
	if r.Accepted < 0 || r.Refused < 0 {
		return fmt.Errorf("%w: event batch reply with negative counts", ErrBadMessage)
	}
	return nil
}
