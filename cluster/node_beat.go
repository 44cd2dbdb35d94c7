package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/bus"
)

// beatGap is the shortest time between two registry writes that task
// starts and ends ask for: a burst of tasks makes one write, not two per
// task, and the registry's free-slot count lags by at most this much.
const beatGap = 250 * time.Millisecond

// checkHeartbeat refuses a heartbeat too slow for the registry's TTL: an
// entry must be rewritten at least three times before it expires.
func checkHeartbeat(ctx context.Context, kv jetstream.KeyValue, every time.Duration) error {
	st, err := kv.Status(ctx)
	if err != nil {
		return fmt.Errorf("read the node registry's settings: %w", err)
	}
	if ttl := st.TTL(); ttl > 0 && every > ttl/3 {
		return fmt.Errorf("heartbeat every %s is too slow: the node registry forgets a node %s after its last heartbeat, "+
			"so beat at most every %s (a third of it)", every, ttl, ttl/3)
	}
	return nil
}

// kick asks for a registry write soon (a task started or ended).
func (n *Node) kick() {
	select {
	case n.kicks <- struct{}{}:
	default: // one is pending already
	}
}

// heartbeat sends the node's heartbeat every Heartbeat, and after a kick
// at most once per beatGap; after each, the registry writer rewrites the
// node's bucket entry.
//
// The heartbeat is a core NATS message on the node's beat subject, and it
// got through once the server answers a flush after it: any server that
// is up carries it at once. The bucket entry is written by its stream's
// leader, and after a lost server the new leader is elected 4 to 9 s
// later; had liveness waited on that write, every run would count every
// node lost, and every node itself cut off, for each election.
func (n *Node) heartbeat() {
	defer n.loops.Done()
	t := time.NewTicker(n.o.Heartbeat)
	defer t.Stop()
	last, ok := time.Now(), time.Now() // the last beat asked for; the last one that got through
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		case <-n.kicks:
			if wait := beatGap - time.Since(last); wait > 0 {
				select {
				case <-time.After(wait):
				case <-n.ctx.Done():
					return
				}
			}
		}
		last = time.Now()
		err := n.beat()
		n.register()
		if err != nil {
			if n.ctx.Err() == nil {
				n.o.Log.Warn().Err(err).Msg("heartbeat")
			}
			continue
		}
		n.beatSent.Store(last.UnixNano())
		n.sendReleases()
		if time.Since(ok) > 2*n.o.Heartbeat {
			n.checkClaims(n.ctx)
		}
		ok = time.Now()
	}
}

// entry is the node's registry entry as of now.
func (n *Node) entry() []byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.info.Free = n.o.Slots - len(n.running)
	n.info.Heartbeat = time.Now().UTC()
	b, _ := json.Marshal(n.info)
	return b
}

// beat publishes the node's entry on its beat subject and waits (at most
// a heartbeat) for the server to answer a flush: then the beat is there.
func (n *Node) beat() error {
	nc := n.o.Bus.NATS()
	if err := nc.Publish(bus.NodeBeatSubject(n.o.Bus.Prefix(), n.o.ID), n.entry()); err != nil {
		return err
	}
	return nc.FlushTimeout(n.o.Heartbeat)
}

// register asks the registry writer to rewrite the node's entry.
func (n *Node) register() {
	select {
	case n.registers <- struct{}{}:
	default: // one is pending already
	}
}

// keepRegistry rewrites the node's bucket entry when asked, in the
// background: a write that waits out an election holds up no heartbeat.
func (n *Node) keepRegistry() {
	defer n.loops.Done()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.registers:
		}
		if err := n.writeRegistry(n.ctx); err != nil && n.ctx.Err() == nil {
			n.o.Log.Debug().Err(err).Msg("node registry entry (rewritten at the next heartbeat)")
		}
	}
}

// writeRegistry writes the node's registry entry.
func (n *Node) writeRegistry(ctx context.Context) error {
	b := n.entry()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := n.registry().Put(ctx, n.o.ID, b)
	if err != nil && n.restoreRegistry(ctx) {
		_, err = n.registry().Put(ctx, n.o.ID, b)
	}
	return err
}
