package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
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
// next gathers. A batch no requester answers (none subscribed, or no
// answer in relayTimeout: a server lost on the way, a requester
// reconnecting) is sent again, its events with their IDs, for at most
// relayRetryFor: the stream stores an event it has already once, so a
// batch taken whose answer was lost is not stored twice. Emit never
// blocks: an event that finds the relay's buffer full is dropped and
// counted, and so is every event of a batch still unanswered after
// relayRetryFor (its requester is gone: killed, or cut off; the run's
// lease then stops the task's agents, run_lease.go).

// ctlEvents is the control operation nodes send their tasks' events on.
const ctlEvents = "events"

// Bounds of a relay: the events it holds while its requester is slow, the
// bytes of one batch, the batches on their way at once (one: the next
// gathers meanwhile, so a busy task's batches are large, and a batch sent
// again still comes before the later ones), how long a batch waits for its
// answer (a task's result waits for its events, so a batch lost with its
// server holds the result that long: the requester answers in
// milliseconds, and a batch sent again is stored once), how long an
// unanswered batch is sent again, and how long the task's end waits for
// its last events to be answered.
const (
	relayBuffer     = 1 << 14
	relayBatchBytes = 256 << 10
	relayWindow     = 1
	relayTimeout    = 2 * time.Second
	relayRetryFor   = 10 * time.Second
	relayDrain      = 10 * time.Second
	relayReplyBytes = 4 << 10
)

// relayCounts are what a node's relays did with its tasks' events.
type relayCounts struct {
	sent, dropped, refused, resent atomic.Uint64
}

// eventRelay sends one task delivery's events to the run's requester. Its
// methods are safe for concurrent use.
type eventRelay struct {
	nc      *nats.Conn
	subject string
	inbox   string // replies come to inbox.<batch>
	sub     *nats.Subscription
	d       *delivery
	counts  *relayCounts
	log     zerolog.Logger
	max     int           // events held at most
	retry   time.Duration // how long an unanswered batch is sent again

	mu       sync.Mutex
	wake     *sync.Cond
	buf      []messages.Event
	head     int                   // buf[head:] are waiting
	batches  uint64                // batches sent
	inflight map[uint64]*sentBatch // by batch number
	flushes  []chan struct{}       // closed once nothing waits and nothing is on its way
	closing  bool
	ended    bool // the end marker is sent (or on its way)
	warned   bool
	done     chan struct{}
}

// sentBatch is a batch on its way.
type sentBatch struct {
	events int
	end    bool // the relay's end marker (no events)
	data   []byte
	first  time.Time     // when it was first sent
	wait   time.Duration // before it is sent again
	timer  *time.Timer   // its answer's timeout, or its next try
}

// newEventRelay starts the relay of the delivery d of task agent of run.
func newEventRelay(conn *bus.Conn, run, agent string, d *delivery, counts *relayCounts, max int, log zerolog.Logger) *eventRelay {
	r := &eventRelay{nc: conn.NATS(), subject: bus.CtlSubject(conn.Prefix(), run, agent, ctlEvents), d: d, counts: counts,
		max: max, retry: relayRetryFor, log: log, inflight: map[uint64]*sentBatch{}, done: make(chan struct{})}
	r.wake = sync.NewCond(&r.mu)
	r.inbox = r.nc.NewInbox()
	sub, err := r.nc.Subscribe(r.inbox+".*", r.onReply)
	if err != nil {
		// Every batch will find no answer and be counted dropped.
		log.Warn().Err(err).Msg("subscribe to the answers of the requester")
	}
	r.sub = sub
	go r.loop()
	return r
}

// Emit queues ev for the requester (actors.Emitter).
func (r *eventRelay) Emit(ev messages.Event) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.closing || len(r.buf)-r.head >= r.max {
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
	case <-t.C: // the loop ends once its last batches are answered or time out
	}
}

func (r *eventRelay) loop() {
	defer close(r.done)
	defer func() {
		if r.sub != nil {
			_ = r.sub.Unsubscribe()
		}
	}()
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		switch waiting := len(r.buf) - r.head; {
		case waiting > 0 && len(r.inflight) < relayWindow:
			batch := r.take()
			r.batches++
			n := r.batches
			r.mu.Unlock()
			r.send(n, batch)
			r.mu.Lock()
			continue
		case waiting == 0 && len(r.inflight) == 0:
			for _, ch := range r.flushes {
				close(ch)
			}
			r.flushes = nil
			r.buf, r.head = r.buf[:0], 0
			if r.closing && !r.ended {
				// Every batch is answered (or given up): the end marker
				// tells the requester that nothing more comes.
				r.ended = true
				r.batches++
				n := r.batches
				r.mu.Unlock()
				r.sendEnd(n)
				r.mu.Lock()
				continue
			}
			if r.closing {
				return
			}
		}
		r.wake.Wait()
	}
}

// take removes the next batch from buf: at most MaxEventBatch events and,
// past the first, relayBatchBytes of their data. Called with mu held.
func (r *eventRelay) take() []messages.Event {
	n, size := 0, 0
	waiting := r.buf[r.head:]
	for n < len(waiting) && n < messages.MaxEventBatch {
		size += len(waiting[n].Data) + 256 // the envelope, roughly
		if n > 0 && size > relayBatchBytes {
			break
		}
		n++
	}
	batch := waiting[:n:n]
	r.head += n
	switch {
	case r.head == len(r.buf):
		r.buf, r.head = nil, 0 // batch keeps the old array
	case r.head >= messages.MaxEventBatch*4:
		// Those sent are not kept: the waiting ones move to a new array
		// (batch keeps the old one).
		r.buf, r.head = append(make([]messages.Event, 0, len(r.buf)-r.head), r.buf[r.head:]...), 0
	}
	return batch
}

// send publishes batch n (its events' JSON, one per line) as a request
// proving the delivery; its answer (or its timeout) settles it.
func (r *eventRelay) send(n uint64, batch []messages.Event) {
	// An Encoder writes what json.Marshal gives, and a newline, with no
	// copy of each line.
	var buf bytes.Buffer
	buf.Grow(len(batch) * 512)
	enc, events := json.NewEncoder(&buf), 0
	for _, ev := range batch {
		if err := enc.Encode(ev); err != nil {
			r.counts.dropped.Add(1)
			r.log.Error().Err(err).Str("type", ev.Type).Msg("encode an event")
			continue
		}
		events++
	}
	if events == 0 {
		return
	}
	sb := &sentBatch{events: events, data: buf.Bytes(), first: time.Now(), wait: relayResendFirst}
	r.mu.Lock()
	r.inflight[n] = sb
	r.mu.Unlock()
	r.post(n, sb)
}

// sendEnd sends the relay's end marker as batch n: no data, the end
// header, the delivery's proof. It goes again while unanswered, as a
// batch does.
func (r *eventRelay) sendEnd(n uint64) {
	sb := &sentBatch{end: true, first: time.Now(), wait: relayResendFirst}
	r.mu.Lock()
	r.inflight[n] = sb
	r.mu.Unlock()
	r.post(n, sb)
}

// Waits before an unanswered batch is sent again: the first, doubling up
// to the last.
const (
	relayResendFirst = 100 * time.Millisecond
	relayResendMost  = 2 * time.Second
)

// post sends batch n (again), unless it is settled.
func (r *eventRelay) post(n uint64, sb *sentBatch) {
	r.mu.Lock()
	if r.inflight[n] != sb {
		r.mu.Unlock()
		return
	}
	sb.timer = time.AfterFunc(relayTimeout, func() { r.settle(n, nil, errors.New("no answer in time")) })
	r.mu.Unlock()
	reply := r.inbox + "." + strconv.FormatUint(n, 10)
	h := r.d.sign(nil, sb.data)
	if sb.end {
		h.Set(messages.RelayEndHeader, "1")
	}
	if err := r.nc.PublishMsg(&nats.Msg{Subject: r.subject, Reply: reply, Data: sb.data, Header: h}); err != nil {
		r.settle(n, nil, err)
	}
}

// onReply settles the batch an answer is for.
func (r *eventRelay) onReply(m *nats.Msg) {
	n, err := strconv.ParseUint(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:], 10, 64)
	if err != nil {
		return
	}
	if m.Header.Get("Status") == "503" {
		r.settle(n, nil, nats.ErrNoResponders)
		return
	}
	rep, err := messages.Decode[messages.EventBatchReply](m.Data, relayReplyBytes)
	if err == nil && rep.Error != nil {
		err = rep.Error
	}
	r.settle(n, &rep, err)
}

// settle counts what became of batch n, once; a batch no requester
// answered is sent again instead, within its relayRetryFor.
func (r *eventRelay) settle(n uint64, rep *messages.EventBatchReply, err error) {
	r.mu.Lock()
	sb := r.inflight[n]
	if sb == nil {
		r.mu.Unlock()
		return // settled already (answered, then timed out, or the reverse)
	}
	sb.timer.Stop()
	if rep == nil && time.Since(sb.first)+sb.wait < r.retry {
		wait := sb.wait
		sb.wait = min(2*sb.wait, relayResendMost)
		sb.timer = time.AfterFunc(wait, func() { r.post(n, sb) })
		r.mu.Unlock()
		r.counts.resent.Add(1)
		r.log.Debug().Err(err).Str("subject", r.subject).Msg("the run's requester has not answered a batch of the task's events: it goes again")
		return
	}
	delete(r.inflight, n)
	r.mu.Unlock()
	r.wake.Signal()
	if rep != nil {
		r.counts.sent.Add(uint64(rep.Accepted))
		r.counts.refused.Add(uint64(rep.Refused))
		if rep.Refused > 0 {
			r.log.Warn().Int("refused", rep.Refused).Str("subject", r.subject).Msg("the run's requester refused events of the task")
		}
	}
	if err != nil && sb.end {
		r.log.Debug().Err(err).Str("subject", r.subject).Msg("the run's requester did not take the end of the task's events")
		return
	}
	if err != nil {
		if rep == nil || rep.Refused == 0 {
			r.counts.dropped.Add(uint64(sb.events))
		}
		r.warnOnce(err)
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
	lvl.Err(err).Str("subject", r.subject).Msg("the run's requester did not take the task's events: they are dropped")
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
