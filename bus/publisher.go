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
	// AckTimeout is how long an acknowledgement is awaited before the event
	// counts as dropped (default 5s).
	AckTimeout time.Duration
	Log        zerolog.Logger
}

// Publisher puts events on <prefix>.evt.<run>.<agent>.<type>, captured by
// the TROUPE_EVENTS stream. It implements actors.Emitter: Emit never
// blocks, whatever NATS is doing.
type Publisher struct {
	c         *Conn
	js        jetstream.JetStream
	q         chan queued
	log       zerolog.Logger
	published atomic.Uint64
	dropped   atomic.Uint64
	emitted   atomic.Uint64
	closing   atomic.Bool
	stall     time.Duration // how long a publish waits for room in the window
	done      chan struct{}
	stop      chan struct{}
	flushMu   sync.Mutex
	flushReq  chan chan struct{}
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
	p := &Publisher{c: c, q: make(chan queued, o.Queue), log: o.Log, stall: o.AckTimeout, done: make(chan struct{}),
		stop: make(chan struct{}), flushReq: make(chan chan struct{})}
	js, err := jetstream.New(c.nc, jetstream.WithPublishAsyncMaxPending(o.Window),
		jetstream.WithPublishAsyncTimeout(o.AckTimeout),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			p.dropped.Add(1)
			p.published.Add(^uint64(0)) // it was counted when sent
			p.log.Debug().Err(err).Str("subject", m.Subject).Msg("event not acknowledged; counted as dropped")
		}))
	if err != nil {
		return nil, err
	}
	p.js = js
	go p.loop()
	return p, nil
}

// queued is an event waiting to be published, with its JSON when it came
// encoded (EmitEncoded).
type queued struct {
	ev  messages.Event
	raw []byte
}

// Emit queues ev for publishing, or drops and counts it when the queue is
// full or the publisher is closed. It never blocks.
func (p *Publisher) Emit(ev messages.Event) { p.enqueue(queued{ev: ev}) }

// EmitEncoded is Emit for an event whose JSON is raw already, published as
// it is: ev must be what raw decodes to (messages.ScanEvent gives both).
// A run's requester publishes so the events its nodes relay, which it
// checked without decoding their data.
func (p *Publisher) EmitEncoded(ev messages.Event, raw []byte) { p.enqueue(queued{ev: ev, raw: raw}) }

func (p *Publisher) enqueue(e queued) {
	p.emitted.Add(1)
	if p.closing.Load() {
		p.dropped.Add(1)
		return
	}
	select {
	case p.q <- e:
	default:
		p.dropped.Add(1)
	}
}

// Published counts the events the stream acknowledged (events whose
// acknowledgement is still awaited count as published until it fails).
func (p *Publisher) Published() uint64 { return p.published.Load() }

// Dropped counts the events that were not published: the queue was full,
// the connection refused them, or their acknowledgement never came.
func (p *Publisher) Dropped() uint64 { return p.dropped.Load() }

// Emitted counts the events given to Emit.
func (p *Publisher) Emitted() uint64 { return p.emitted.Load() }

func (p *Publisher) loop() {
	defer close(p.done)
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

func (p *Publisher) publish(e queued) {
	ev, data := e.ev, e.raw
	if data == nil {
		var err error
		if data, err = json.Marshal(ev); err != nil {
			p.dropped.Add(1)
			p.log.Error().Err(err).Str("type", ev.Type).Msg("encode event")
			return
		}
	}
	subj := EventSubject(p.c.prefix, token(ev.Run), token(ev.Agent), ev.Type)
	// With the window full, wait for room as long as an acknowledgement
	// may take (the default, 200 ms, dropped events on a busy machine
	// while the queue had room): the queue, not the window, is where an
	// event is dropped. Emit does not wait on this goroutine.
	if _, err := p.js.PublishAsync(subj, data, jetstream.WithStallWait(p.stall)); err != nil {
		p.dropped.Add(1)
		if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			p.log.Debug().Err(err).Str("subject", subj).Msg("publish event")
		}
		return
	}
	p.published.Add(1)
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
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-p.js.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close publishes what is queued, waits for the acknowledgements (until
// ctx ends), and stops. Events emitted afterwards are dropped and counted.
func (p *Publisher) Close(ctx context.Context) error {
	err := p.Flush(ctx)
	if p.closing.CompareAndSwap(false, true) {
		close(p.stop)
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	select { // what the last drain published
	case <-p.js.PublishAsyncComplete():
	case <-ctx.Done():
		return ctx.Err()
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
