package watch

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// MonitorOptions configure a Monitor.
type MonitorOptions struct {
	// Conn is the connection the queue and the registry are read through;
	// the watcher role may read both.
	Conn *bus.Conn
	// QueuePeriod is how often the task queue's depth is read (default 1s).
	QueuePeriod time.Duration
	Log         zerolog.Logger
}

// Stats are what a Monitor last read. A figure it could not read is
// absent (nil), never a made-up 0.
type Stats struct {
	// QueueDepth is the tasks in the task queue: waiting for a node, or
	// taken by one and not yet finished (the queue drops a task when its
	// node acknowledges it, after its result).
	QueueDepth *int64 `json:"queue_depth"`
	// Nodes are the live nodes of the registry, by name then ID; nil when
	// the registry cannot be read.
	Nodes []NodeStats `json:"nodes"`
}

// NodeStats is one live node as its last registry entry has it.
type NodeStats struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Host     string   `json:"host,omitempty"`
	Kinds    []string `json:"kinds"`
	Slots    int      `json:"slots"`
	Free     int      `json:"free"`
	Draining bool     `json:"draining,omitempty"`
	Version  string   `json:"version,omitempty"`
}

// Monitor follows what the events do not say: the depth of the task
// queue and the nodes of the registry with their free slots. It reads them
// in the background (the queue every QueuePeriod, the registry as its
// entries change), so a scrape or a page takes the latest figures at once
// and never waits on NATS. A read that fails is logged once, not each
// time, and retried less and less often.
type Monitor struct {
	o    MonitorOptions
	stop context.CancelFunc
	done chan struct{}

	mu       sync.Mutex
	depth    int64
	depthOK  bool
	nodes    map[string]seenNode
	nodesOK  bool
	nodesTTL time.Duration
	// nodesRead is closed once the registry has been read through the
	// first time (troupe_nodes is left out until then).
	nodesRead chan struct{}
	failing   map[string]string // what failed → the error last logged
	misses    map[string]int    // what failed → failures in a row
}

// seenNode is a registry entry and when this process received it.
type seenNode struct {
	info messages.NodeInfo
	at   time.Time
}

// Backoff of a failing read, and the longest silence a node is allowed
// when neither it nor its bucket says.
const (
	queueDesc       = "the task queue's depth"
	registryDesc    = "the node registry"
	monitorRetryMax = time.Minute
	defaultNodeTTL  = 30 * time.Second
)

// StartMonitor starts reading; Close stops it.
func StartMonitor(ctx context.Context, o MonitorOptions) *Monitor {
	if o.QueuePeriod <= 0 {
		o.QueuePeriod = time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	m := &Monitor{o: o, stop: cancel, done: make(chan struct{}), nodes: map[string]seenNode{},
		failing: map[string]string{}, misses: map[string]int{}, nodesRead: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); m.pollQueue(ctx) }()
	go func() { defer wg.Done(); m.followRegistry(ctx) }()
	go func() { wg.Wait(); close(m.done) }()
	return m
}

// NodesRead is closed once the node registry has been read through for
// the first time: from then on Stats holds the live nodes.
func (m *Monitor) NodesRead() <-chan struct{} { return m.nodesRead }

// Close stops the monitor and waits for its readers.
func (m *Monitor) Close() {
	m.stop()
	<-m.done
}

// Stats returns the latest figures.
func (m *Monitor) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	var s Stats
	if m.depthOK {
		d := m.depth
		s.QueueDepth = &d
	}
	if !m.nodesOK {
		return s
	}
	now := time.Now()
	s.Nodes = []NodeStats{}
	for id, n := range m.nodes {
		if now.Sub(n.at) > m.nodeTimeout(n.info) {
			delete(m.nodes, id) // silent: stopped or cut off (an expired entry sends no delete)
			continue
		}
		i := n.info
		s.Nodes = append(s.Nodes, NodeStats{ID: i.ID, Name: i.Name, Host: i.Host, Kinds: i.Kinds, Slots: i.Slots,
			Free: max(min(i.Free, i.Slots), 0), Draining: i.Draining, Version: i.Version})
	}
	slices.SortFunc(s.Nodes, func(a, b NodeStats) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return s
}

// nodeTimeout is how long a node may go without a new entry: two of its
// heartbeats, or the bucket's TTL when it does not say.
func (m *Monitor) nodeTimeout(n messages.NodeInfo) time.Duration {
	switch {
	case n.BeatMS > 0:
		return 2 * time.Duration(n.BeatMS) * time.Millisecond
	case m.nodesTTL > 0:
		return m.nodesTTL
	}
	return defaultNodeTTL
}

// pollQueue reads the task stream's message count every QueuePeriod, or
// less often while it fails.
func (m *Monitor) pollQueue(ctx context.Context) {
	wait := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		n, err := m.readDepth(ctx)
		if ctx.Err() != nil {
			return
		}
		m.mu.Lock()
		m.depth, m.depthOK = n, err == nil
		m.mu.Unlock()
		m.report("queue", queueDesc, err)
		wait = m.o.QueuePeriod
		if err != nil {
			wait = m.retry("queue")
		}
	}
}

func (m *Monitor) readDepth(ctx context.Context) (int64, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := m.o.Conn.JetStream().Stream(rctx, m.o.Conn.Names().Tasks)
	if err != nil {
		return 0, err
	}
	return int64(s.CachedInfo().State.Msgs), nil
}

// followRegistry keeps the live nodes of the registry, watching its
// bucket; it opens the bucket again when the watch ends or cannot start.
func (m *Monitor) followRegistry(ctx context.Context) {
	for ctx.Err() == nil {
		err := m.watchRegistry(ctx)
		if ctx.Err() != nil {
			return
		}
		m.mu.Lock()
		m.nodesOK = false
		clear(m.nodes)
		m.mu.Unlock()
		m.report("nodes", registryDesc, err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(m.retry("nodes")):
		}
	}
}

func (m *Monitor) watchRegistry(ctx context.Context) error {
	bucket := m.o.Conn.Names().Nodes
	octx, cancel := context.WithTimeout(ctx, 5*time.Second)
	kv, err := m.o.Conn.JetStream().KeyValue(octx, bucket)
	var ttl time.Duration
	if err == nil {
		var st jetstream.KeyValueStatus
		if st, err = kv.Status(octx); err == nil {
			ttl = st.TTL()
		}
	}
	cancel()
	if err != nil {
		return err
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("the registry's watch ended")
			}
			m.applyEntry(e, ttl)
		}
	}
}

// applyEntry takes one registry update; nil marks the end of the entries
// that existed when the watch began.
func (m *Monitor) applyEntry(e jetstream.KeyValueEntry, ttl time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e == nil {
		select {
		case <-m.nodesRead:
		default:
			close(m.nodesRead)
		}
		m.nodesOK, m.nodesTTL = true, ttl
		m.reportLocked("nodes", registryDesc, nil)
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		delete(m.nodes, e.Key())
		return
	}
	n, err := messages.Decode[messages.NodeInfo](e.Value(), 1<<20)
	if err != nil || n.ID != e.Key() {
		return
	}
	at := time.Now()
	if c := e.Created(); !m.nodesOK && c.Before(at) {
		at = c // replayed: as old as the server says
	}
	m.nodes[n.ID] = seenNode{info: n, at: at}
}

// report logs what a read's failure is, once per change of error, and
// that it works again.
func (m *Monitor) report(what, desc string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reportLocked(what, desc, err)
}

func (m *Monitor) reportLocked(what, desc string, err error) {
	last, was := m.failing[what]
	switch {
	case err == nil:
		m.misses[what] = 0
		if !was {
			return
		}
		delete(m.failing, what)
		m.o.Log.Info().Msgf("web: %s can be read again", desc)
	case !was || last != err.Error():
		m.failing[what] = err.Error()
		m.o.Log.Warn().Err(err).Msgf("web: cannot read %s; it is left out until it can", desc)
	}
}

// retry is how long to wait after a failure of what: the queue's period
// doubled per failure in a row, at most monitorRetryMax.
func (m *Monitor) retry(what string) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.misses[what]
	m.misses[what] = min(n+1, 10)
	return min(m.o.QueuePeriod<<n, monitorRetryMax)
}
