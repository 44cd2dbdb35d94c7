package bus

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
)

// PublisherOptions size a Publisher; zero values take the defaults.
type PublisherOptions struct {
	// Queue bounds the events waiting to be published (default 65,536);
	// an event that finds it full is dropped and counted.
	Queue int
	// Window bounds the published events not yet acknowledged by the
	// stream (default 4,096).
	Window int
	// AckTimeout is how long an acknowledgement is awaited before the
	// event is sent again (default 5s).
	AckTimeout time.Duration
	// RetryFor bounds how long an event the stream did not acknowledge (a
	// lost server, a leader election) is sent again before it counts as
	// dropped (default 60s: within the stream's two-minute deduplication
	// window, so the stream stores it once).
	RetryFor time.Duration
	Log      zerolog.Logger
}

// Publisher puts events on <prefix>.evt.<run>.<agent>.<type>, captured by
// the TROUPE_EVENTS stream. It implements actors.Emitter: Emit never
// blocks, whatever NATS is doing.
//
// Each event goes with its ID as its message ID. One the stream does not
// acknowledge (its server lost, its leader being elected) is sent again
// with the same ID until it is (for RetryFor): the stream stores it once
// however often it came. While it does, and while the connection is
// down, no later event is sent, so they reach the stream in the order
// they were emitted; they wait in the queue.
type Publisher struct {
	c         *Conn
	js        jetstream.JetStream
	q         chan messages.Event
	log       zerolog.Logger
	published atomic.Uint64
	dropped   atomic.Uint64
	emitted   atomic.Uint64
	closing   atomic.Bool // Close has flushed: Emit drops
	finishing atomic.Bool // Close was called: no waiting for a connection that is down
	stall     time.Duration
	retryFor  time.Duration
	done      chan struct{}
	stop      chan struct{}
	flushMu   sync.Mutex
	flushReq  chan chan struct{}

	acks        chan sent     // sent and awaiting their acknowledgements, in order
	resending   atomic.Bool   // an event is being sent again: hold back the later ones
	outstanding atomic.Int64  // sent and not yet published or dropped
	settled     chan struct{} // a token after each settling (capacity 1)
}

// sent is an event on its way to the stream.
type sent struct {
	msg *nats.Msg
	fut jetstream.PubAckFuture
}

// NewPublisher starts a publisher on c.
func (c *Conn) NewPublisher(o PublisherOptions) (*Publisher, error) {
	if o.Queue <= 0 {
		o.Queue = 1 << 16
	}
	if o.Window <= 0 {
		o.Window = 4096
	}
	if o.AckTimeout <= 0 {
		o.AckTimeout = 5 * time.Second
	}
	if o.RetryFor <= 0 {
		o.RetryFor = time.Minute
	}
	p := &Publisher{c: c, q: make(chan messages.Event, o.Queue), log: o.Log, stall: o.AckTimeout, retryFor: o.RetryFor,
		done: make(chan struct{}), stop: make(chan struct{}), flushReq: make(chan chan struct{}),
		acks: make(chan sent, o.Window), settled: make(chan struct{}, 1)}
	js, err := jetstream.New(c.nc, jetstream.WithPublishAsyncMaxPending(o.Window),
		jetstream.WithPublishAsyncTimeout(o.AckTimeout))
	if err != nil {
		return nil, err
	}
	p.js = js
	go p.loop()
	go p.confirm()
	return p, nil
}

// Emit queues ev for publishing, or drops and counts it when the queue is
// full or the publisher is closed. It never blocks.
func (p *Publisher) Emit(ev messages.Event) {
	p.emitted.Add(1)
	if p.closing.Load() {
		p.dropped.Add(1)
		return
	}
	select {
	case p.q <- ev:
	default:
		p.dropped.Add(1)
	}
}

// Published counts the events the stream acknowledged.
func (p *Publisher) Published() uint64 { return p.published.Load() }

// Dropped counts the events that were not published: the queue was full,
// the stream refused them, or no acknowledgement came for RetryFor (or
// before Close gave up).
func (p *Publisher) Dropped() uint64 { return p.dropped.Load() }

// Emitted counts the events given to Emit.
func (p *Publisher) Emitted() uint64 { return p.emitted.Load() }

func (p *Publisher) loop() {
	defer close(p.done)
	defer close(p.acks)
	drain := func() {
		for {
			select {
			case ev := <-p.q:
				p.publish(ev)
			default:
				return
			}
		}
	}
	for {
		select {
		case ev := <-p.q:
			p.publish(ev)
		case ack := <-p.flushReq:
			drain()
			close(ack)
		case <-p.stop:
			drain()
			return
		}
	}
}

func (p *Publisher) publish(ev messages.Event) {
	data, err := json.Marshal(ev)
	if err != nil {
		p.dropped.Add(1)
		p.log.Error().Err(err).Str("type", ev.Type).Msg("encode event")
		return
	}
	m := &nats.Msg{Subject: EventSubject(p.c.prefix, token(ev.Run), token(ev.Agent), ev.Type), Data: data,
		Header: nats.Header{jetstream.MsgIDHeader: []string{ev.ID}}}
	if !p.sendable() {
		p.dropped.Add(1) // closing with the connection down
		return
	}
	// With the window full, wait for room as long as an acknowledgement
	// may take (the default, 200 ms, dropped events on a busy machine
	// while the queue had room): the queue, not the window, is where an
	// event is dropped. Emit does not wait on this goroutine.
	p.outstanding.Add(1)
	fut, err := p.js.PublishMsgAsync(m, jetstream.WithStallWait(p.stall))
	if err != nil {
		if Transient(err) || errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			p.resend(m) // here, holding back the later events
		} else {
			p.dropped.Add(1)
			p.log.Debug().Err(err).Str("subject", m.Subject).Msg("publish event")
		}
		p.settle()
		return
	}
	p.acks <- sent{msg: m, fut: fut}
}

// sendable waits until an event may be sent: no earlier one is being
// sent again and the connection is up (or Close was called); it reports
// false when Close was called with the connection down.
func (p *Publisher) sendable() bool {
	for {
		up := p.c.nc.IsConnected()
		switch {
		case p.finishing.Load() && !up:
			return false
		case up && !p.resending.Load() || p.finishing.Load() && !p.resending.Load():
			return true
		}
		<-time.After(20 * time.Millisecond)
	}
}

// confirm settles the events sent, in the order they were sent: counted
// published once acknowledged; sent again (resend) when a lost server or
// an election kept the acknowledgement away, holding back the later
// events meanwhile.
func (p *Publisher) confirm() {
	for s := range p.acks {
		select {
		case <-s.fut.Ok():
			p.published.Add(1)
		case err := <-s.fut.Err():
			if Transient(err) {
				p.resending.Store(true)
				p.resend(s.msg)
			} else {
				p.dropped.Add(1)
				p.log.Debug().Err(err).Str("subject", s.msg.Subject).Msg("event refused by the stream; counted as dropped")
			}
		}
		if len(p.acks) == 0 {
			p.resending.Store(false)
		}
		p.settle()
	}
}

// resend sends m again, with its message ID, until the stream
// acknowledges it, for at most RetryFor (or until Close is called with
// the connection down).
func (p *Publisher) resend(m *nats.Msg) {
	give := time.Now().Add(p.retryFor)
	wait := retryFirst
	for {
		if p.finishing.Load() && !p.c.nc.IsConnected() {
			p.dropped.Add(1)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.stall)
		_, err := p.js.PublishMsg(ctx, m)
		cancel()
		if err == nil {
			p.published.Add(1)
			return
		}
		if !Transient(err) || time.Now().After(give) {
			p.dropped.Add(1)
			p.log.Debug().Err(err).Str("subject", m.Subject).Msg("event not acknowledged; counted as dropped")
			return
		}
		p.log.Debug().Err(err).Str("subject", m.Subject).Msg("event not acknowledged yet; sending it again")
		<-time.After(wait)
		wait = min(2*wait, retryMost)
	}
}

// settle counts one sent event settled.
func (p *Publisher) settle() {
	p.outstanding.Add(-1)
	select {
	case p.settled <- struct{}{}:
	default:
	}
}

// Flush waits until every event emitted so far is published and
// acknowledged (or counted as dropped), or ctx ends.
func (p *Publisher) Flush(ctx context.Context) error {
	p.flushMu.Lock()
	defer p.flushMu.Unlock()
	ack := make(chan struct{})
	select {
	case p.flushReq <- ack:
	case <-p.done:
		return p.awaitSettled(ctx)
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
	case <-ctx.Done():
		return ctx.Err()
	}
	return p.awaitSettled(ctx)
}

// awaitSettled waits until no event sent is awaiting its settling.
func (p *Publisher) awaitSettled(ctx context.Context) error {
	for p.outstanding.Load() > 0 {
		select {
		case <-p.settled:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close publishes what is queued, waits for the acknowledgements (until
// ctx ends), and stops. Events emitted afterwards are dropped and counted.
// With the connection down it waits for none: what is queued is counted
// as dropped.
func (p *Publisher) Close(ctx context.Context) error {
	p.finishing.Store(true)
	err := p.Flush(ctx)
	if p.closing.CompareAndSwap(false, true) {
		close(p.stop)
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := p.awaitSettled(ctx); err != nil { // what the last drain published
		return err
	}
	// An Emit racing with Close may have queued after the last drain.
	for {
		select {
		case <-p.q:
			p.dropped.Add(1)
		default:
			return err
		}
	}
}

// token makes an ID usable as one subject token.
func token(s string) string {
	if s == "" {
		return "_"
	}
	if !strings.ContainsAny(s, ". *>\t\r\n") {
		return s
	}
	return strings.NewReplacer(".", "_", " ", "_", "*", "_", ">", "_", "\t", "_", "\r", "_", "\n", "_").Replace(s)
}
