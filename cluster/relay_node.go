package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// Events of a node's agents go to their run's requester, never straight
// to the events stream: a node may not publish on the events subjects. Each
// task a node runs has a relay, which sends the events of the task's agent,
// of the agents it starts and the node's own about the task to
// <prefix>.ctl.<run>.<agent>.events as requests (messages.EventBatch)
// proving the task's delivery; the requester checks them and publishes
// what it vouches for (relay_remote.go). A relay sends one batch at a
// time, in the order the events were emitted: while one is on its way the
// next gathers. Emit never blocks: an event that finds the relay's buffer
// full is dropped and counted, and so is every event of a batch the
// requester does not answer (it is gone: killed, or cut off; the run's
// lease then stops the task's agents, run_lease.go).

// ctlEvents is the control operation nodes send their tasks' events on.
const ctlEvents = "events"

// Bounds of a relay: the events it holds while its requester is slow, the
// events and bytes of one batch, how long a batch waits for its answer,
// and how long the task's end waits for its last events to be answered.
const (
	relayBuffer      = 1 << 14
	relayBatchBytes  = 256 << 10
	relayTimeout     = 5 * time.Second
	relayDrain       = 10 * time.Second
	relayReplyBytes  = 4 << 10
	relayWarnDropped = "the run's requester did not take the task's events: they are dropped"
)

// relayCounts are what a node's relays did with its tasks' events.
type relayCounts struct {
	sent, dropped, refused atomic.Uint64
}

// eventRelay sends one task delivery's events to the run's requester. Its
// methods are safe for concurrent use.
type eventRelay struct {
	nc      *nats.Conn
	subject string
	d       *delivery
	counts  *relayCounts
	log     zerolog.Logger
	max     int // events held at most

	mu      sync.Mutex
	wake    *sync.Cond
	buf     []messages.Event
	flushes []chan struct{} // closed once buf is empty and nothing is on its way
	closing bool
	warned  bool
	done    chan struct{}
}

// newEventRelay starts the relay of the delivery d of task agent of run.
func newEventRelay(conn *bus.Conn, run, agent string, d *delivery, counts *relayCounts, max int, log zerolog.Logger) *eventRelay {
	r := &eventRelay{nc: conn.NATS(), subject: bus.CtlSubject(conn.Prefix(), run, agent, ctlEvents), d: d, counts: counts,
		max: max, log: log, done: make(chan struct{})}
	r.wake = sync.NewCond(&r.mu)
	go r.loop()
	return r
}

// Emit queues ev for the requester (actors.Emitter).
func (r *eventRelay) Emit(ev messages.Event) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.closing || len(r.buf) >= r.max {
		r.mu.Unlock()
		r.counts.dropped.Add(1)
		return
	}
	r.buf = append(r.buf, ev)
	r.mu.Unlock()
	r.wake.Signal()
}

// flush waits until every event emitted so far has been answered by the
// requester (or dropped), or ctx ends.
func (r *eventRelay) flush(ctx context.Context) {
	if r == nil {
		return
	}
	ch := make(chan struct{})
	r.mu.Lock()
	r.flushes = append(r.flushes, ch)
	r.mu.Unlock()
	r.wake.Signal()
	select {
	case <-ch:
	case <-r.done:
	case <-ctx.Done():
	}
}

// close sends what is queued (waiting at most relayDrain) and stops the
// relay; events emitted afterwards are dropped and counted.
func (r *eventRelay) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	r.wake.Signal()
	t := time.NewTimer(relayDrain)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C: // the loop ends once its last request times out
	}
}

func (r *eventRelay) loop() {
	defer close(r.done)
	for {
		r.mu.Lock()
		for len(r.buf) == 0 && len(r.flushes) == 0 && !r.closing {
			r.wake.Wait()
		}
		if len(r.buf) == 0 {
			for _, ch := range r.flushes {
				close(ch)
			}
			r.flushes = nil
			closing := r.closing
			r.mu.Unlock()
			if closing {
				return
			}
			continue
		}
		batch := r.take()
		r.mu.Unlock()
		r.send(batch)
	}
}

// take removes the next batch from buf: at most MaxEventBatch events and,
// past the first, relayBatchBytes of their data. Called with mu held.
func (r *eventRelay) take() []messages.Event {
	n, size := 0, 0
	for n < len(r.buf) && n < messages.MaxEventBatch {
		size += len(r.buf[n].Data) + 256 // the envelope, roughly
		if n > 0 && size > relayBatchBytes {
			break
		}
		n++
	}
	batch := make([]messages.Event, n)
	copy(batch, r.buf)
	r.buf = append(r.buf[:0], r.buf[n:]...)
	return batch
}

// send asks the requester to take batch, proving the delivery.
func (r *eventRelay) send(batch []messages.Event) {
	b, err := json.Marshal(messages.EventBatch{V: messages.ProtocolVersion, Events: batch})
	if err != nil {
		r.counts.dropped.Add(uint64(len(batch)))
		r.log.Error().Err(err).Msg("encode a batch of events")
		return
	}
	m, err := r.nc.RequestMsg(&nats.Msg{Subject: r.subject, Data: b, Header: r.d.sign(nil, b)}, relayTimeout)
	var rep messages.EventBatchReply
	if err == nil {
		rep, err = messages.Decode[messages.EventBatchReply](m.Data, relayReplyBytes)
	}
	if err == nil && rep.Error != nil {
		err = rep.Error
	}
	if err != nil {
		r.counts.dropped.Add(uint64(len(batch)))
		r.warnOnce(err)
		return
	}
	r.counts.sent.Add(uint64(rep.Accepted))
	r.counts.refused.Add(uint64(rep.Refused))
	if rep.Refused > 0 {
		r.log.Warn().Int("refused", rep.Refused).Str("subject", r.subject).Msg("the run's requester refused events of the task")
	}
}

// warnOnce logs the first batch the requester did not take (a requester
// that is gone would otherwise log once per batch).
func (r *eventRelay) warnOnce(err error) {
	r.mu.Lock()
	warned := r.warned
	r.warned = true
	r.mu.Unlock()
	lvl := r.log.Warn()
	if warned {
		lvl = r.log.Debug()
	}
	if errors.Is(err, nats.ErrNoResponders) {
		lvl = lvl.Str("why", "no requester answers for the run")
	}
	lvl.Err(err).Str("subject", r.subject).Msg(relayWarnDropped)
}

// relay starts the relay of the delivery d of task (nil when the task has
// no secret, which no troupe requester sends: its events stay here).
func (n *Node) relay(task actors.ChildTask, d *delivery, log zerolog.Logger) *eventRelay {
	if d == nil {
		return nil
	}
	return newEventRelay(n.o.Bus, task.Run, task.ID, d, &n.relays, relayBuffer, log)
}

// taskEvents is where the events of a task's agents go: the node's own
// sinks and the task's relay.
func (n *Node) taskEvents(rel *eventRelay) actors.Emitter {
	if rel == nil {
		return n.o.Events
	}
	if n.o.Events == nil {
		return rel
	}
	return actors.Emitters{n.o.Events, rel}
}
