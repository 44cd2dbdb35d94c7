package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// A run is a lease too. Its orchestrator writes the run's entry in the
// runs bucket when the run starts and rewrites it every quarter of the
// lease; an entry older than the lease means the orchestrator is gone
// (killed, or cut off): nodes stop the run's agents and drop its tasks,
// and watchers show the run lost. The run's end deletes the entry.

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

	mu       sync.Mutex
	onRegain func() // called after a heartbeat gets through a gap longer than the lease
}

// StartRunLease writes run's lease entry (lease 0: DefaultRunLease) and
// keeps rewriting it until Stop.
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
	kv, err := conn.JetStream().KeyValue(ctx, conn.Names().Runs)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", conn.Names().Runs, err)
	}
	host, _ := os.Hostname()
	l := &RunLease{conn: conn, kv: kv, log: log, done: make(chan struct{}),
		entry: messages.RunLease{Run: run, Origin: fmt.Sprintf("%s/%d", host, os.Getpid()), LeaseMS: lease.Milliseconds()}}
	if err := l.beat(ctx); err != nil {
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

func (l *RunLease) beat(ctx context.Context) error {
	e := l.entry
	e.Heartbeat = time.Now().UTC()
	b, _ := json.Marshal(e)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := l.kv.Put(ctx, e.Run, b)
	return err
}

func (l *RunLease) keep(ctx context.Context, lease time.Duration) {
	defer close(l.done)
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
		if err := l.beat(ctx); err != nil {
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
}

func newRunLeases() *runLeases {
	return &runLeases{seen: map[string]time.Time{}, lease: map[string]time.Duration{}}
}

// apply records a runs bucket entry heard now; one that existed before
// the watch began counts from when the server stored it.
func (g *runLeases) apply(e jetstream.KeyValueEntry, now time.Time, existed bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(g.seen, e.Key())
		delete(g.lease, e.Key())
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
type RunLeases struct{ g *runLeases }

// WatchRunLeases follows the runs bucket until ctx ends; it returns once
// the entries that exist are in (or after 5 s).
func WatchRunLeases(ctx context.Context, conn *bus.Conn) (*RunLeases, error) {
	g := newRunLeases()
	ready, err := watchRunLeases(ctx, conn, g)
	if err != nil {
		return nil, err
	}
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
	}
	return &RunLeases{g}, nil
}

// Lost reports whether a run with lease, whose latest event is from last,
// is lost by now: its entry lapsed, or, with no entry (deleted, expired or
// never seen), nothing was heard of it for the lease.
func (l *RunLeases) Lost(run string, lease time.Duration, last, now time.Time) bool {
	if lapsed, known := l.g.lapsed(run, now); known {
		return lapsed
	}
	return now.Sub(last) > lease
}
