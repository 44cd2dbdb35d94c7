package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// Following a stream across a lost server. An ordered consumer is one
// server's: when that server goes away the client library makes a new
// one where the last delivered message left off, but not always: after a
// SIGKILL of its server one was seen reconnected, healthy by every sign
// it gives, and delivering nothing ever again. So a Follow watches its
// consumer: when the consumer has stored messages for it (NumPending) and
// has delivered none of them for stallAfter, or cannot be asked, it is
// replaced by a new ordered consumer that starts right after the last
// message delivered. Messages are handed on once each, in stream order,
// whatever consumer delivered them.

// How a Follow watches its consumer.
const (
	followCheckEvery = time.Second
	followStallAfter = 3 * time.Second
	// followExpiry is the pull expiry of the ordered consumer's requests;
	// its heartbeats come every half of it, so a consumer whose server is
	// gone is noticed within two of them.
	followExpiry = 5 * time.Second
)

// FollowConfig says what to follow.
type FollowConfig struct {
	Stream  string
	Filters []string
	// Policy is where to start: jetstream.DeliverAllPolicy or
	// DeliverNewPolicy.
	Policy jetstream.DeliverPolicy
	// What names the stream for the log ("events", "results of run X").
	What string
	Log  zerolog.Logger
}

// Following is a Follow in progress.
type Following struct {
	c      *Conn
	cfg    FollowConfig
	handle func(jetstream.Msg)

	handleMu sync.Mutex    // one message handed on at a time
	last     atomic.Uint64 // the stream sequence of the last message handed on
	handled  atomic.Uint64 // messages handed on (progress)
	busy     atomic.Bool   // a message is being handed on (a slow reader is not a stall)
	resumed  atomic.Uint64

	mu      sync.Mutex
	gen     uint64 // the current consumer's generation
	cons    jetstream.Consumer
	cc      jetstream.ConsumeContext
	stream  jetstream.Stream // to ask what it holds (owes)
	backlog uint64

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

// Follow hands each message of cfg.Stream matching cfg.Filters to handle,
// in stream order, once each, until Stop or ctx ends; it replaces a
// consumer that a lost server left stalled (see above). Making the first
// consumer waits out a server that cannot answer yet, for at most
// StartWait.
func (c *Conn) Follow(ctx context.Context, cfg FollowConfig, handle func(jetstream.Msg)) (*Following, error) {
	f := &Following{c: c, cfg: cfg, handle: handle, stop: make(chan struct{}), done: make(chan struct{})}
	err := awaitStart(ctx, cfg.Log, "follow "+cfg.What, func(ctx context.Context) error { return f.start(ctx, true) })
	if err != nil {
		return nil, err
	}
	go f.watch(ctx)
	return f, nil
}

// start makes a consumer (the first one as cfg says, later ones right
// after the last message handed on) and consumes with it.
func (f *Following) start(ctx context.Context, first bool) error {
	oc := jetstream.OrderedConsumerConfig{FilterSubjects: f.cfg.Filters, DeliverPolicy: f.cfg.Policy}
	if first && f.cfg.Policy == jetstream.DeliverNewPolicy {
		// New messages are those after the stream's last: a consumer that
		// replaces this one starts there too, not at the stream's start.
		s, err := f.c.js.Stream(ctx, f.cfg.Stream)
		if err != nil {
			return err
		}
		f.last.Store(s.CachedInfo().State.LastSeq)
		first = false
	}
	if !first || f.last.Load() > 0 {
		oc.DeliverPolicy, oc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, f.last.Load()+1
	}
	cons, err := f.c.js.OrderedConsumer(ctx, f.cfg.Stream, oc)
	if err != nil {
		return err
	}
	var backlog uint64
	if first {
		if info, err := cons.Info(ctx); err == nil {
			backlog = info.NumPending
		}
	}
	f.mu.Lock()
	f.gen++
	gen := f.gen
	f.mu.Unlock()
	cc, err := cons.Consume(func(m jetstream.Msg) { f.deliver(gen, m) }, jetstream.PullExpiry(followExpiry))
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.cons, f.cc = cons, cc
	if first {
		f.backlog = backlog
	}
	f.mu.Unlock()
	return nil
}

// deliver hands m on, unless a later consumer replaced the one that
// delivered it, or it was handed on already.
func (f *Following) deliver(gen uint64, m jetstream.Msg) {
	md, err := m.Metadata()
	if err != nil {
		return
	}
	f.handleMu.Lock()
	defer f.handleMu.Unlock()
	f.mu.Lock()
	current := gen == f.gen
	f.mu.Unlock()
	if !current || md.Sequence.Stream <= f.last.Load() {
		return
	}
	f.busy.Store(true)
	f.handle(m)
	f.busy.Store(false)
	f.last.Store(md.Sequence.Stream)
	f.handled.Add(1)
}

// watch replaces a stalled consumer until the Follow stops.
func (f *Following) watch(ctx context.Context) {
	defer close(f.done)
	t := time.NewTicker(followCheckEvery)
	defer t.Stop()
	var quietSince time.Time // since when the consumer has owed messages and handed on none
	seen := f.handled.Load()
	for {
		select {
		case <-ctx.Done():
			f.end()
			return
		case <-f.stop:
			f.end()
			return
		case now := <-t.C:
			if n := f.handled.Load(); n != seen || f.busy.Load() || !f.owes(ctx) {
				seen, quietSince = n, time.Time{}
				continue
			}
			if quietSince.IsZero() {
				quietSince = now
				continue
			}
			if now.Sub(quietSince) < followStallAfter {
				continue
			}
			if err := f.restart(ctx); err != nil {
				f.cfg.Log.Debug().Err(err).Msg("follow " + f.cfg.What + ": a new consumer could not be made yet")
				continue
			}
			quietSince = time.Time{}
		}
	}
}

// owes reports whether the stream holds a message for the Follow after
// the last one handed on, or cannot be asked (its server is gone). It asks
// the stream, never the ordered consumer: the client library holds the
// consumer's lock while it tries to make a new one after a lost server
// (for ever, when the server keeps refusing), and an Info call waits for
// that lock, ignoring its context.
func (f *Following) owes(ctx context.Context) bool {
	ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	f.mu.Lock()
	s := f.stream
	f.mu.Unlock()
	if s == nil {
		var err error
		if s, err = f.c.js.Stream(ictx, f.cfg.Stream); err != nil {
			return true
		}
		f.mu.Lock()
		f.stream = s
		f.mu.Unlock()
	}
	filters := f.cfg.Filters
	if len(filters) == 0 {
		filters = []string{">"}
	}
	for _, subj := range filters {
		m, err := s.GetLastMsgForSubject(ictx, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil || m.Sequence > f.last.Load() {
			return true
		}
	}
	return false
}

// restart replaces the consumer with one starting after the last message
// handed on.
func (f *Following) restart(ctx context.Context) error {
	f.mu.Lock()
	old := f.cc
	f.gen++ // the old consumer hands on nothing more
	f.mu.Unlock()
	// Its Stop waits for the library's lock, held while it tries to make
	// a new consumer itself (see owes): it ends in the background.
	go old.Stop()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := f.start(sctx, false); err != nil {
		return fmt.Errorf("resume after %d: %w", f.last.Load(), err)
	}
	f.resumed.Add(1)
	f.cfg.Log.Warn().Uint64("after", f.last.Load()).Msg("follow " + f.cfg.What + ": the consumer stalled (its server lost?): resumed with a new one")
	return nil
}

// end stops the consumer once a message being handed on is: when it
// returns, handle is not called again.
func (f *Following) end() {
	f.handleMu.Lock()
	f.mu.Lock()
	cc := f.cc
	f.gen++ // nothing more is handed on
	f.mu.Unlock()
	f.handleMu.Unlock()
	go cc.Stop() // (see restart)
}

// Stop ends the Follow; Done is closed once it has.
func (f *Following) Stop() { f.stopOnce.Do(func() { close(f.stop) }) }

// Done is closed once the Follow has ended (Stop, or its context).
func (f *Following) Done() <-chan struct{} { return f.done }

// Backlog is how many stored messages a Follow from the start began with.
func (f *Following) Backlog() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.backlog
}

// Resumed counts the consumers replaced after a stall.
func (f *Following) Resumed() uint64 { return f.resumed.Load() }

// Last is the stream sequence of the last message handed on.
func (f *Following) Last() uint64 { return f.last.Load() }
