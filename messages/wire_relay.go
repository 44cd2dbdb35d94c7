package messages

import "fmt"

// Events from nodes. A node does not publish its agents' events on the
// events subjects (its credentials do not allow it): it sends them to the
// run's requester, a batch at a time, on <prefix>.ctl.<run>.<agent>.events
// (agent: the task's agent), as a request proving the task's delivery. A
// batch is JSON Lines: each event's JSON (as json.Marshal writes an Event)
// on a line of its own. The requester checks the proof and every event (of
// its run, from the delivery's node, about the task's agent or an agent
// the task's agents started) and publishes those it vouches for; the rest
// it refuses and counts. It answers with an EventBatchReply.
//
// A relay ends with an end marker: a request on the same subject with no
// data and the header RelayEndHeader, proving the delivery like a batch,
// sent once every batch before it was answered (or given up). A result
// with RelayEnds promises one. The requester waits for the end markers of
// the deliveries whose results it took before it ends the run (for a
// bounded time: a node may die first); from then on it refuses every batch
// of the run, so no event of the run is stored after its run.finished.

// RelayEndHeader marks a relay's end marker.
const RelayEndHeader = "Troupe-Relay-End"

// MaxEventBatch bounds the events of one batch.
const MaxEventBatch = 1024

// EventBatchReply is the requester's answer to a batch of events: how many of
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
