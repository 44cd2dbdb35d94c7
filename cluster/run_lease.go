package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// A run is a lease too. Its orchestrator writes the run's entry in the
// runs bucket when the run starts and sends a heartbeat every quarter of
// the lease: a core NATS message on the run's beat subject, which any
// server that is up carries at once (a leader election of the bucket's
// stream does not stop it), and the bucket entry rewritten, for those
// that start later. A lease not heard of for longer than itself means the
// orchestrator is gone (killed, or cut off): nodes stop the run's agents
// and drop its tasks, and watchers show the run lost. The run's end
// deletes the entry.

// DefaultRunLease is how long a run may go without a heartbeat before
// nodes stop its agents (node.run_lease).
const DefaultRunLease = 10 * time.Second

// RunLease keeps a run's lease alive while its orchestrator lives.
type RunLease struct {
	conn   *bus.Conn
	kv     jetstream.KeyValue
	entry  messages.RunLease
	log    zerolog.Logger
	cancel context.CancelFunc
	done   chan struct{}
	writes chan struct{} // asks the bucket writer to rewrite the entry

	mu       sync.Mutex
	onRegain func() // called after a heartbeat gets through a gap longer than the lease
}

// StartRunLease writes run's lease entry (lease 0: DefaultRunLease) and
// keeps the lease alive until Stop.
func StartRunLease(ctx context.Context, conn *bus.Conn, run string, lease time.Duration, log zerolog.Logger) (*RunLease, error) {
	if lease <= 0 {
		lease = DefaultRunLease
	}
	if lease > bus.RunsTTL {
		return nil, fmt.Errorf("node.run_lease %s: at most %s", lease, bus.RunsTTL)
	}
	if err := conn.EnsureStreams(ctx, bus.StreamLimits{}); err != nil {
		return nil, err
	}
	kv, err := openBucket(ctx, conn, log, conn.Names().Runs)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	l := &RunLease{conn: conn, kv: kv, log: log, done: make(chan struct{}), writes: make(chan struct{}, 1),
		entry: messages.RunLease{Run: run, Origin: fmt.Sprintf("%s/%d", host, os.Getpid()), LeaseMS: lease.Milliseconds()}}
	if err := awaitStart(ctx, log, "write the lease of run "+run, l.write); err != nil {
		return nil, fmt.Errorf("write the lease of run %s: %w", run, err)
	}
	var lctx context.Context
	lctx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go l.keep(lctx, lease)
	return l, nil
}

// Lease is the run's lease.
func (l *RunLease) Lease() time.Duration { return time.Duration(l.entry.LeaseMS) * time.Millisecond }

// OnRegain sets what to do when a heartbeat gets through after a gap
// longer than the lease: nodes have dropped the run's tasks meanwhile.
func (l *RunLease) OnRegain(fn func()) {
	l.mu.Lock()
	l.onRegain = fn
	l.mu.Unlock()
}

// now is the lease entry as of now.
func (l *RunLease) now() []byte {
	e := l.entry
	e.Heartbeat = time.Now().UTC()
	b, _ := json.Marshal(e)
	return b
}

// write writes the lease's bucket entry.
func (l *RunLease) write(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := l.kv.Put(ctx, l.entry.Run, l.now())
	return err
}

// beat sends the lease's heartbeat and waits (at most a second) for the
// server to answer a flush: then it is there.
func (l *RunLease) beat() error {
	nc := l.conn.NATS()
	if err := nc.Publish(bus.RunBeatSubject(l.conn.Prefix(), l.entry.Run), l.now()); err != nil {
		return err
	}
	return nc.FlushTimeout(time.Second)
}

func (l *RunLease) keep(ctx context.Context, lease time.Duration) {
	defer close(l.done)
	writer := make(chan struct{})
	go func() { defer close(writer); l.keepEntry(ctx) }()
	defer func() { <-writer }()
	t := time.NewTicker(lease / 4)
	defer t.Stop()
	ok := time.Now() // when the last beat that got through was sent
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sent := time.Now()
		err := l.beat()
		select {
		case l.writes <- struct{}{}:
		default:
		}
		if err != nil {
			if ctx.Err() == nil {
				l.log.Warn().Err(err).Str("run", l.entry.Run).Msg("run lease heartbeat")
			}
			continue
		}
		if time.Since(ok) > lease-lapseEarly { // nodes may have counted it lapsed
			l.log.Warn().Str("run", l.entry.Run).Msg("the run's lease lapsed while the server was out of reach: its remote tasks are queued again")
			l.mu.Lock()
			fn := l.onRegain
			l.mu.Unlock()
			if fn != nil {
				fn()
			}
		}
		ok = sent
	}
}

// keepEntry rewrites the bucket entry when asked, in the background: a
// write that waits out an election holds up no heartbeat.
func (l *RunLease) keepEntry(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.writes:
		}
		if err := l.write(ctx); err != nil && ctx.Err() == nil {
			l.log.Debug().Err(err).Str("run", l.entry.Run).Msg("run lease entry (rewritten at the next heartbeat)")
		}
	}
}

// Stop ends the heartbeats and deletes the run's entry: the run ended.
func (l *RunLease) Stop() {
	l.cancel()
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := l.kv.Delete(ctx, l.entry.Run); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		l.log.Debug().Err(err).Msg("delete the run's lease (it expires)")
	}
}

// runLeases is what a process has heard of run leases: for each live
// run, its lease and when (by this process's clock) its entry was last
// written. A deleted entry (the run ended) is forgotten at once, one that
// expired from the bucket when it is pruned.
type runLeases struct {
	mu    sync.Mutex
	seen  map[string]time.Time
	lease map[string]time.Duration
	ended map[string]time.Time // runs whose entry was deleted (they ended), and when
}

func newRunLeases() *runLeases {
	return &runLeases{seen: map[string]time.Time{}, lease: map[string]time.Duration{}, ended: map[string]time.Time{}}
}

// apply records a runs bucket entry heard now; one that existed before
// the watch began counts from when the server stored it.
func (g *runLeases) apply(e jetstream.KeyValueEntry, now time.Time, existed bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(g.seen, e.Key())
		delete(g.lease, e.Key())
		g.ended[e.Key()] = now
		return
	}
	l, err := messages.Decode[messages.RunLease](e.Value(), maxRequestBytes)
	if err != nil || l.Run != e.Key() {
		return
	}
	if at := e.Created(); existed && !at.IsZero() && at.Before(now) {
		now = at
	}
	if at, ok := g.seen[l.Run]; ok && at.After(now) {
		now = at // never older than what was heard already
	}
	g.seen[l.Run] = now
	g.lease[l.Run] = time.Duration(l.LeaseMS) * time.Millisecond
	delete(g.ended, l.Run) // resumed
}

// heard records a run's heartbeat, m on <prefix>.beat.run.<run>,
// heard now. One whose subject and lease name different runs is ignored.
func (g *runLeases) heard(m *nats.Msg, now time.Time) {
	l, err := messages.Decode[messages.RunLease](m.Data, maxRequestBytes)
	if err != nil || !strings.HasSuffix(m.Subject, ".beat.run."+l.Run) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if at, ok := g.seen[l.Run]; ok && at.After(now) {
		now = at
	}
	g.seen[l.Run] = now
	g.lease[l.Run] = time.Duration(l.LeaseMS) * time.Millisecond
}

// lapsed reports whether run's lease has lapsed by now; known reports
// whether its entry is remembered (a run whose entry was deleted or
// pruned is not).
func (g *runLeases) lapsed(run string, now time.Time) (lapsed, known bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	at, ok := g.seen[run]
	if !ok {
		return false, false
	}
	return now.Sub(at) > g.lease[run], true
}

// prune forgets the runs not heard from for longer than the bucket keeps
// their entries.
func (g *runLeases) prune(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for run, at := range g.seen {
		if now.Sub(at) > bus.RunsTTL {
			delete(g.seen, run)
			delete(g.lease, run)
		}
	}
	for run, at := range g.ended {
		if now.Sub(at) > bus.RunsTTL {
			delete(g.ended, run)
		}
	}
}

// hasEnded reports whether run's entry was deleted: its orchestrator
// ended it.
func (g *runLeases) hasEnded(run string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.ended[run]
	return ok
}

// hearAll counts every live run as heard from now: a process cut off
// from the server hears no heartbeat, and no run lapses for that.
func (g *runLeases) hearAll(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for run := range g.seen {
		g.seen[run] = now
	}
}

// watchRunLeases follows the runs bucket into g until ctx ends; ready is
// closed once the entries that existed are in.
func watchRunLeases(ctx context.Context, conn *bus.Conn, g *runLeases) (ready <-chan struct{}, err error) {
	kv, err := conn.JetStream().KeyValue(ctx, conn.Names().Runs)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", conn.Names().Runs, err)
	}
	ready, _, err = watchKV(ctx, kv, func(e jetstream.KeyValueEntry, initial bool) { g.apply(e, time.Now(), initial) })
	return ready, err
}

// RunLeases follows the run leases for a watcher.
type RunLeases struct {
	g    *runLeases
	conn *bus.Conn
}

// WatchRunLeases follows the runs' heartbeats and the runs bucket until
// ctx ends; it returns once the entries that exist are in (or after 5 s).
func WatchRunLeases(ctx context.Context, conn *bus.Conn) (*RunLeases, error) {
	g := newRunLeases()
	sub, err := conn.NATS().Subscribe(bus.RunBeatSubject(conn.Prefix(), "*"), func(m *nats.Msg) { g.heard(m, time.Now()) })
	if err != nil {
		return nil, fmt.Errorf("follow the runs' heartbeats: %w", err)
	}
	go func() {
		<-ctx.Done()
		_ = sub.Unsubscribe()
	}()
	ready, err := watchRunLeases(ctx, conn, g)
	if err != nil {
		return nil, err
	}
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
	}
	go func() { // forget the runs the bucket no longer keeps
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				g.prune(now)
			}
		}
	}()
	return &RunLeases{g: g, conn: conn}, nil
}

// Lost reports whether a run with lease, whose latest event is from last,
// is lost by now: its entry lapsed, or, with no entry (expired or never
// seen), nothing was heard of it for the lease. A run whose entry was
// deleted ended (its run.finished may be held back by a lost server); and
// while this watcher is cut off from the server, it hears no heartbeat
// and judges no run.
func (l *RunLeases) Lost(run string, lease time.Duration, last, now time.Time) bool {
	if l.conn != nil && !l.conn.NATS().IsConnected() {
		l.g.hearAll(now)
		return false
	}
	if l.g.hasEnded(run) {
		return false
	}
	if lapsed, known := l.g.lapsed(run, now); known {
		return lapsed
	}
	return now.Sub(last) > lease
}
