package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// registry is the orchestrator's live view of the node bucket. An entry
// that expires from the bucket (its node stopped beating) sends no delete
// to watchers, so a node not heard from within the bucket's TTL counts as
// gone here too.
//
// A node is heard from through its heartbeats on its beat subject and
// through its bucket entries; an entry no newer (by the node's own clock)
// than what was heard already refreshes nothing, so a watcher's replay
// after a reconnect never makes a silent node look alive.
//
// A node found stale is remembered as lost, with the revision and the
// heartbeat time of its last entry: a replay of that entry (the watcher
// resuming after a reconnect) does not bring it back, a newer one does
// (it beats again), and is then listed by back once.
type registry struct {
	mu       sync.Mutex
	nodes    map[string]messages.NodeInfo
	seen     map[string]time.Time // when this process last heard from each node (its own clock)
	rev      map[string]uint64    // the revision of each node's last entry
	lost     map[string]uint64    // nodes found stale → the revision of their last entry
	lostBeat map[string]time.Time // nodes found stale → the heartbeat time of their last entry
	back     []messages.NodeInfo  // lost nodes heard from again, not yet listed by back
	ttl      time.Duration        // the bucket's; 0: entries do not expire
	done     <-chan struct{}      // closed when the watch has ended
}

func watchRegistry(ctx context.Context, conn *bus.Conn, log zerolog.Logger) (*registry, error) {
	bucket := conn.Names().Nodes
	var kv jetstream.KeyValue
	var st jetstream.KeyValueStatus
	if err := awaitStart(ctx, log, "open "+bucket, func(ctx context.Context) (err error) {
		if kv, err = conn.JetStream().KeyValue(ctx, bucket); err != nil {
			return err
		}
		st, err = kv.Status(ctx)
		return err
	}); err != nil {
		return nil, fmt.Errorf("open %s: %w", bucket, err)
	}
	g := &registry{nodes: map[string]messages.NodeInfo{}, seen: map[string]time.Time{}, rev: map[string]uint64{}, lost: map[string]uint64{},
		lostBeat: map[string]time.Time{}, ttl: st.TTL()}
	if err := awaitStart(ctx, log, "watch "+bucket, func(context.Context) (err error) {
		_, g.done, err = watchKV(ctx, kv, func(e jetstream.KeyValueEntry, _ bool) { g.apply(e, log) })
		return err
	}); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *registry) apply(e jetstream.KeyValueEntry, log zerolog.Logger) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(g.nodes, e.Key())
		delete(g.seen, e.Key())
		delete(g.rev, e.Key())
		delete(g.lost, e.Key()) // it left after all: a later entry is a new start, which says so itself
		delete(g.lostBeat, e.Key())
		g.back = slices.DeleteFunc(g.back, func(n messages.NodeInfo) bool { return n.ID == e.Key() })
		return
	}
	n, err := messages.Decode[messages.NodeInfo](e.Value(), maxTaskBytes)
	if err != nil || n.ID != e.Key() {
		log.Warn().Str("key", e.Key()).Msg("malformed node entry ignored")
		return
	}
	if last, lost := g.lost[n.ID]; lost && e.Revision() <= last {
		return // the entry it was lost with, replayed
	}
	g.rev[n.ID] = e.Revision()
	g.hear(n)
}

// heard records a node's heartbeat, m on <prefix>.beat.node.<node>. One
// whose subject and entry name different nodes is ignored.
func (g *registry) heard(m *nats.Msg, log zerolog.Logger) {
	n, err := messages.Decode[messages.NodeInfo](m.Data, maxTaskBytes)
	if err != nil || !strings.HasSuffix(m.Subject, ".beat.node."+n.ID) {
		log.Warn().Str("subject", m.Subject).Msg("malformed node heartbeat ignored")
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hear(n)
}

// hear takes n, heard now, unless what was heard of the node already is
// as new (by the node's clock); a lost node newer than its last entry is
// back. g.mu is held.
func (g *registry) hear(n messages.NodeInfo) {
	if had, ok := g.nodes[n.ID]; ok && !n.Heartbeat.After(had.Heartbeat) {
		return
	}
	if at, lost := g.lostBeat[n.ID]; lost {
		if !n.Heartbeat.After(at) {
			return
		}
		delete(g.lost, n.ID)
		delete(g.lostBeat, n.ID)
		g.back = append(g.back, n)
	}
	g.nodes[n.ID] = n
	g.seen[n.ID] = time.Now()
}

// hasFreeSlot reports whether a live node serving kind has a free slot.
func (g *registry) hasFreeSlot(kind string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	for _, n := range g.nodes {
		if g.live(n.ID, now) && !n.Draining && n.Free > 0 && slices.Contains(n.Kinds, kind) {
			return true
		}
	}
	return false
}

// serves reports whether a live node that is not draining serves kind.
func (g *registry) serves(kind string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	for _, n := range g.nodes {
		if g.live(n.ID, now) && !n.Draining && slices.Contains(n.Kinds, kind) {
			return true
		}
	}
	return false
}

// live reports whether node was heard from within the bucket's TTL.
func (g *registry) live(node string, now time.Time) bool {
	return g.ttl <= 0 || now.Sub(g.seen[node]) <= g.ttl
}

func (g *registry) list() []messages.NodeInfo {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]messages.NodeInfo, 0, len(g.nodes))
	now := time.Now()
	for _, n := range g.nodes {
		if g.live(n.ID, now) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b messages.NodeInfo) int {
		if a.Name != b.Name {
			if a.Name < b.Name {
				return -1
			}
			return 1
		}
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	return out
}

// stale lists the nodes silent for longer than their timeout, by ID, and
// forgets them as lost (their entries expire from the bucket without a
// delete). timeout > 0 applies to every node; 0 gives each node two of
// its own heartbeats (legacyLeaseTimeout for a node that does not say).
func (g *registry) stale(now time.Time, timeout time.Duration) []messages.NodeInfo {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []messages.NodeInfo
	for id, n := range g.nodes {
		if now.Sub(g.seen[id]) > nodeTimeout(n, timeout) {
			out = append(out, n)
			g.lost[id], g.lostBeat[id] = g.rev[id], n.Heartbeat
			delete(g.nodes, id)
			delete(g.seen, id)
			delete(g.rev, id)
		}
	}
	slices.SortFunc(out, func(a, b messages.NodeInfo) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// nodeTimeout is how long n may stay silent before it counts as lost.
func nodeTimeout(n messages.NodeInfo, fixed time.Duration) time.Duration {
	switch {
	case fixed > 0:
		return fixed
	case n.BeatMS > 0:
		return 2 * time.Duration(n.BeatMS) * time.Millisecond
	}
	return legacyLeaseTimeout
}

// hearAll counts every node as heard from now: while this process cannot
// reach the server it hears no heartbeat, and a node is not lost for that.
func (g *registry) hearAll(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for id := range g.seen {
		g.seen[id] = now
	}
}

// returned lists, once each, the lost nodes heard from again since the
// last call.
func (g *registry) returned() []messages.NodeInfo {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.back
	g.back = nil
	return out
}

func (g *registry) wait() { <-g.done }
