package bus

import (
	"context"
	"encoding/json"
	"slices"
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
	// Window bounds the events on their way to the stream at once
	// (default 4,096): at most one per agent, so as many agents at once.
	Window int
	// AckTimeout is how long an acknowledgement is awaited before the
	// event is sent again (default 2s: one lost with its server holds its
	// agent's later events that long; sent again, it is stored once).
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
// Each agent's events (per run) are a lane: a lane sends its next event
// only once the stream has acknowledged the one before, so they are
// stored in the order they were emitted whatever happens on the way.
// Lanes go at once, one event each. An event the stream did not
// acknowledge (its server lost, its leader being elected) is sent again
// with its ID as message ID until it is (for RetryFor): the stream stores
// it once however often it came, and its lane's later events wait.
//
// A run's run.finished waits until every event of its run given to the
// publisher before it is settled (stored, or counted as dropped), however
// long a lost server holds them: in the stream it comes after all of
// them, so a subscriber that ends at run.finished has seen every stored
// event of the run.
//
// Why not send a lane's events without waiting (as a window of
// asynchronous publishes would): an event on its way when its server dies
// is lost with it, while the next, sent after the client reconnected (or
// after the stream elected a leader), is stored; the first, sent again,
// would then be stored after it: an agent's seq 7 before its 6.
type Publisher struct {
	c         *Conn
	js        jetstream.JetStream
	log       zerolog.Logger
	published atomic.Uint64
	dropped   atomic.Uint64
	emitted   atomic.Uint64
	finishing atomic.Bool // Close was called: no waiting for a connection that is down
	stall     time.Duration
	retryFor  time.Duration
	window    chan struct{} // a token per event on its way

	mu      sync.Mutex
	queue   int              // events held at most
	held    int              // accepted and not yet published or dropped
	lanes   map[string]*lane // agents with events held, by run and agent
	runHeld map[string]int   // events held, by run
	gates   map[string][]*gate
	order   uint64 // events accepted so far: the next one's order
	cond    *sync.Cond
	closing bool // Close has flushed: Emit drops
	lanesWG sync.WaitGroup
	settled chan struct{} // a token after each settling (capacity 1)
}

// lane holds one agent's events waiting to be published, oldest first.
type lane struct {
	q []queued
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
		o.AckTimeout = 2 * time.Second
	}
	if o.RetryFor <= 0 {
		o.RetryFor = time.Minute
	}
	js, err := jetstream.New(c.nc)
	if err != nil {
		return nil, err
	}
	p := &Publisher{c: c, js: js, log: o.Log, stall: o.AckTimeout, retryFor: o.RetryFor,
		window: make(chan struct{}, o.Window), queue: o.Queue, lanes: map[string]*lane{},
		runHeld: map[string]int{}, gates: map[string][]*gate{}, settled: make(chan struct{}, 1)}
	p.cond = sync.NewCond(&p.mu)
	return p, nil
}

// queued is an event waiting to be published, with its JSON when it came
// encoded (EmitEncoded).
type queued struct {
	ev    messages.Event
	raw   []byte
	order uint64
	gate  *gate // a run.finished: what it waits for
}

// gate holds a run's run.finished until the events of its run accepted
// before it are settled.
type gate struct {
	order  uint64 // the run.finished's
	before int    // events of its run accepted before it, not settled yet
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
	key := e.ev.Run + "\x00" + e.ev.Agent
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing || p.held >= p.queue {
		p.dropped.Add(1)
		return
	}
	p.held++
	e.order = p.order
	p.order++
	p.runHeld[e.ev.Run]++
	if e.ev.Type == messages.EvtRunFinished {
		e.gate = &gate{order: e.order, before: p.runHeld[e.ev.Run] - 1}
		p.gates[e.ev.Run] = append(p.gates[e.ev.Run], e.gate)
	}
	if l := p.lanes[key]; l != nil {
		l.q = append(l.q, e)
		return
	}
	l := &lane{q: []queued{e}}
	p.lanes[key] = l
	p.lanesWG.Add(1)
	go p.drive(key, l)
}

// Published counts the events the stream acknowledged.
func (p *Publisher) Published() uint64 { return p.published.Load() }

// Dropped counts the events that were not published: the queue was full,
// the stream refused them, or no acknowledgement came for RetryFor (or
// before Close gave up).
func (p *Publisher) Dropped() uint64 { return p.dropped.Load() }

// Emitted counts the events given to Emit.
func (p *Publisher) Emitted() uint64 { return p.emitted.Load() }

// drive publishes lane l's events one after the other, each once the one
// before is settled, and ends (forgetting the lane) when none is left.
func (p *Publisher) drive(key string, l *lane) {
	defer p.lanesWG.Done()
	for {
		p.mu.Lock()
		if len(l.q) == 0 {
			delete(p.lanes, key)
			p.mu.Unlock()
			return
		}
		e := l.q[0]
		l.q[0] = queued{}
		l.q = l.q[1:]
		p.open(e)
		p.mu.Unlock()
		p.window <- struct{}{}
		p.publish(e)
		<-p.window
		p.mu.Lock()
		p.held--
		p.settle(e)
		p.mu.Unlock()
		select {
		case p.settled <- struct{}{}:
		default:
		}
	}
}

// open waits, for a run.finished, until the events of its run accepted
// before it are settled. Called with mu held.
func (p *Publisher) open(e queued) {
	if e.gate == nil {
		return
	}
	for e.gate.before > 0 {
		p.cond.Wait()
	}
	gs := p.gates[e.ev.Run]
	gs = slices.DeleteFunc(gs, func(g *gate) bool { return g == e.gate })
	if len(gs) == 0 {
		delete(p.gates, e.ev.Run)
	} else {
		p.gates[e.ev.Run] = gs
	}
}

// settle counts e settled for its run and for the run.finished events
// accepted after it. Called with mu held.
func (p *Publisher) settle(e queued) {
	run := e.ev.Run
	if p.runHeld[run]--; p.runHeld[run] <= 0 {
		delete(p.runHeld, run)
	}
	woke := false
	for _, g := range p.gates[run] {
		if g.order > e.order {
			g.before--
			woke = true
		}
	}
	if woke {
		p.cond.Broadcast()
	}
}

// publish sends one event until the stream acknowledges it, for at most
// RetryFor (or until Close is called with the connection down), and
// counts it published or dropped.
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
	m := &nats.Msg{Subject: EventSubject(p.c.prefix, token(ev.Run), token(ev.Agent), ev.Type), Data: data,
		Header: nats.Header{jetstream.MsgIDHeader: []string{ev.ID}}}
	give := time.Now().Add(p.retryFor)
	wait := retryFirst
	for {
		if !p.awaitUp() {
			p.dropped.Add(1) // closing with the connection down
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.stall)
		_, err := p.js.PublishMsg(ctx, m, jetstream.WithRetryAttempts(0))
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

// awaitUp waits until the connection is up, or reports false when Close
// was called with it down.
func (p *Publisher) awaitUp() bool {
	for !p.c.nc.IsConnected() {
		if p.finishing.Load() {
			return false
		}
		<-time.After(20 * time.Millisecond)
	}
	return true
}

// Flush waits until every event emitted so far is published and
// acknowledged (or counted as dropped), or ctx ends.
func (p *Publisher) Flush(ctx context.Context) error {
	for {
		p.mu.Lock()
		held := p.held
		p.mu.Unlock()
		if held == 0 {
			return nil
		}
		select {
		case <-p.settled:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close publishes what is queued, waits for the acknowledgements (until
// ctx ends), and stops. Events emitted afterwards are dropped and counted.
// With the connection down it waits for none: what is queued is counted
// as dropped.
func (p *Publisher) Close(ctx context.Context) error {
	p.finishing.Store(true)
	err := p.Flush(ctx)
	p.mu.Lock()
	p.closing = true
	p.mu.Unlock()
	lanes := make(chan struct{})
	go func() {
		p.lanesWG.Wait()
		close(lanes)
	}()
	select {
	case <-lanes: // what was emitted while Flush waited is settled too
	case <-ctx.Done():
		return ctx.Err()
	}
	return err
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
