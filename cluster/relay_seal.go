package cluster

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/troupe-ai/troupe/messages"
)

// The end of a run's events from its nodes. A node's relay of a task's
// events ends with an end marker (relay_node.go), sent once every batch
// before it was answered or given up; a result that promises one
// (messages.Result.RelayEnds) makes the run wait for it. When the run's
// root has ended (actors.RunEnder), sealRelays waits for the end markers
// of the deliveries whose results it took, then closes the run's intake:
// every batch that comes later is refused and counted (RemoteStats.Events)
// and never stored. So every event of the run a node relayed is queued on
// the run's publisher before run.finished, which the publisher stores
// after every earlier event of its run (bus.Publisher): a watcher that
// ends at run.finished has seen them all, whatever held them back.

// relayEndWait bounds the wait for the end markers: a node that died
// between its result and its end marker never sends it (a live relay's
// end comes within relayRetryFor of its last batch).
const relayEndWait = 2 * relayRetryFor

// errSealed refuses what comes after the run's intake closed.
var errSealed = fmt.Errorf("%w: the run has ended: its events are sealed", ErrUnproven)

// relayOpened notes that the delivery attempt of c, whose result the run
// took, ends its relay with an end marker, unless that came already.
func (r *Remote) relayOpened(c *remoteChild, res messages.Result) {
	r.intake.RLock()
	sealed := r.sealed
	r.intake.RUnlock()
	if !res.RelayEnds || sealed {
		return
	}
	r.mu.Lock()
	if c.relayEnded != res.Attempt {
		r.relaysOpen[c.task.ID] = res.Attempt
	}
	r.mu.Unlock()
}

// relayEnd takes a relay's end marker for task: its delivery's relay has
// sent everything it will.
func (r *Remote) relayEnd(m *nats.Msg, task string) messages.EventBatchReply {
	rep := messages.EventBatchReply{V: messages.ProtocolVersion}
	c := r.child(task)
	err := fmt.Errorf("%w: task %q is not one of this run's", ErrUnproven, task)
	if c != nil {
		err = c.verify(m.Header, m.Data)
	}
	if err != nil {
		rep.Error = &messages.Error{Code: messages.CodeBadRequest, Message: "refused: " + err.Error()}
		return rep
	}
	attempt, _ := signedBy(m.Header)
	r.mu.Lock()
	c.relayEnded = attempt
	if a, ok := r.relaysOpen[task]; ok && a == attempt {
		delete(r.relaysOpen, task)
	}
	r.mu.Unlock()
	select {
	case r.relayWake <- struct{}{}:
	default:
	}
	return rep
}

// relaysLost stops waiting for the end markers of the relays that node
// held: a lost node sends none, and the run's end need not wait out
// relayEndWait for it (what it sends after the seal is refused).
func (r *Remote) relaysLost(node string) {
	r.mu.Lock()
	dropped := 0
	for task := range r.relaysOpen {
		c := r.waiting[task]
		if c == nil {
			c = r.endedTasks[task]
		}
		if c == nil || c.holder() == node {
			delete(r.relaysOpen, task)
			dropped++
		}
	}
	r.mu.Unlock()
	if dropped > 0 {
		select {
		case r.relayWake <- struct{}{}:
		default:
		}
	}
}

// sealRelays waits (at most relayEndWait) until every relay the run waits
// for has ended, then closes the intake: it returns once no batch is
// being taken and none will be. It returns the relays that had not ended.
func (r *Remote) sealRelays() int {
	r.ending.Store(true)
	r.awaitRelays()
	r.intake.Lock() // a batch being taken is taken first
	r.sealed = true
	r.intake.Unlock()
	r.mu.Lock()
	open := len(r.relaysOpen)
	clear(r.relaysOpen)
	r.mu.Unlock()
	if open > 0 {
		r.o.Log.Warn().Int("relays", open).Msg("the run ended without the end of every node's events: those that come later are refused")
	}
	return open
}

// awaitRelays waits until no relay the run waits for is open, for at
// most relayEndWait.
func (r *Remote) awaitRelays() {
	give := time.NewTimer(relayEndWait)
	defer give.Stop()
	for {
		r.mu.Lock()
		open := len(r.relaysOpen)
		r.mu.Unlock()
		if open == 0 {
			return
		}
		select {
		case <-r.relayWake:
		case <-give.C:
			return
		case <-r.ctx.Done():
			return
		}
	}
}

// refuseSealed answers a batch that came after the run's intake closed.
func (r *Remote) refuseSealed(m *nats.Msg) messages.EventBatchReply {
	rep := messages.EventBatchReply{V: messages.ProtocolVersion,
		Error: &messages.Error{Code: messages.CodeBadRequest, Message: "refused: " + errSealed.Error()}}
	if m.Header.Get(messages.RelayEndHeader) != "" && len(m.Data) == 0 {
		return rep
	}
	data := m.Data
	if n := len(data); n > 0 && data[n-1] == '\n' {
		data = data[:n-1]
	}
	rep.Refused = 1
	for _, b := range data {
		if b == '\n' {
			rep.Refused++
		}
	}
	r.refuseEvents(rep.Refused, errSealed, m.Subject)
	return rep
}
