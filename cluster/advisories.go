package cluster

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/messages"
)

// The queue's advisories: a task delivered MaxDeliver times, a delivery
// terminated by a node (a refusal for good) or by the server.

// advisory reads a queue advisory (ok false: unreadable).
func advisory(data []byte) (messages.TaskAdvisory, bool) {
	var adv messages.TaskAdvisory
	return adv, json.Unmarshal(data, &adv) == nil
}

// waitingAt is the waiting task queued at stream sequence seq (nil when
// it is another run's, or ended); take removes it from the waiting.
func (r *Remote) waitingAt(seq uint64, take bool) *remoteChild {
	r.mu.Lock()
	defer r.mu.Unlock()
	agent, ok := r.bySeq[seq]
	c := r.waiting[agent]
	if !ok || c == nil {
		return nil
	}
	if take {
		delete(r.waiting, agent)
	}
	return c
}

// onMaxDeliveries fails a task that was delivered MaxDeliver times
// without a result and removes it from the queue.
func (r *Remote) onMaxDeliveries(m *nats.Msg) {
	adv, ok := advisory(m.Data)
	if !ok {
		return
	}
	c := r.waitingAt(adv.StreamSeq, true)
	if c == nil {
		return
	}
	r.failedMax.Add(1)
	r.deleteTask(adv.StreamSeq)
	why := c.gaveUp(adv.Deliveries)
	r.o.Log.Warn().Str("agent", c.task.ID).Msg(why)
	c.done <- actors.AgentResult{Status: actors.StatusFailed, Reason: actors.ReasonError, Err: why}
}

// onTerminated fails a task that a node terminated (it could not be read,
// or was published where no node can run it), with the node's reason;
// a delivery the server terminated because its message left the stream
// is no refusal (onDeleted).
func (r *Remote) onTerminated(m *nats.Msg) {
	adv, ok := advisory(m.Data)
	if !ok {
		return
	}
	if deletedByServer(adv.Reason) {
		r.onDeleted(adv)
		return
	}
	c := r.waitingAt(adv.StreamSeq, true)
	if c == nil {
		return
	}
	r.terminated.Add(1)
	why := fmt.Sprintf("task %s was refused for good on attempt %d: %s", c.task.ID, adv.Deliveries, adv.Reason)
	r.o.Log.Warn().Str("agent", c.task.ID).Msg(why)
	c.done <- actors.AgentResult{Status: actors.StatusFailed, Reason: actors.ReasonError, Err: why}
}

// Deleted deliveries. The server terminates a delivery on its own when
// the task's message leaves the stream while a node holds it unacked,
// with a reason of its own (nats-server's consumer.go): that is no node's
// refusal. On a hub it happens when a node's ack crosses the loss of a
// server: a replica of the queue's consumer that has not applied the ack
// yet sees the message removed and reports the delivery terminated,
// moments before the result the node stored first reaches the run (as
// read from CI's hub run and nats-server's code: the advisories came with
// the nodes' acks after a lost server). It happens too when someone removes the message by
// hand. The task is not failed for it: a task a node holds is settled by
// that node's result (or, should the node be lost, by handing it on); a
// task no node is known to hold is queued again, since its message is
// gone and nothing would deliver it.

// serverDeletionReasons are the reasons nats-server gives when it
// terminates a delivery because its message left the stream.
var serverDeletionReasons = []string{"Unacknowledged message was deleted", "Message deleted by stream limits"}

// deletedByServer reports whether a terminated advisory's reason is the
// server's own (the message left the stream), not a node's.
func deletedByServer(reason string) bool { return slices.Contains(serverDeletionReasons, reason) }

// onDeleted handles a delivery the server terminated because its message
// left the stream.
func (r *Remote) onDeleted(adv messages.TaskAdvisory) {
	c := r.waitingAt(adv.StreamSeq, false)
	if c == nil {
		return
	}
	r.deleted.Add(1)
	log := r.o.Log.With().Str("agent", c.task.ID).Uint64("stream_seq", adv.StreamSeq).Str("reason", adv.Reason).Logger()
	if holder := c.holder(); holder != "" {
		log.Info().Str("node", holder).Msg("the task's message left the queue while a node held it (its ack crossing a lost server, or removed by hand): the node's result settles it")
		return
	}
	log.Warn().Msg("the task's message left the queue and no node is known to hold it: queued again")
	c.reissue(anyNode)
}
