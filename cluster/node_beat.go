package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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

// heartbeat rewrites the node's registry entry every Heartbeat, and after
// a kick, at most once per beatGap.
func (n *Node) heartbeat() {
	defer n.loops.Done()
	t := time.NewTicker(n.o.Heartbeat)
	defer t.Stop()
	last, ok := time.Now(), time.Now() // the last write asked for; the last one that got through
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
		if err := n.beat(n.ctx); err != nil {
			if n.ctx.Err() == nil {
				n.o.Log.Warn().Err(err).Msg("heartbeat")
			}
			continue
		}
		n.beatSent.Store(last.UnixNano())
		if time.Since(ok) > 2*n.o.Heartbeat {
			n.checkClaims(n.ctx)
		}
		ok = time.Now()
	}
}

// beat writes the node's registry entry.
func (n *Node) beat(ctx context.Context) error {
	n.mu.Lock()
	n.info.Free = n.o.Slots - len(n.running)
	n.info.Heartbeat = time.Now().UTC()
	b, _ := json.Marshal(n.info)
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := n.registry().Put(ctx, n.o.ID, b)
	if err != nil && n.restoreRegistry(ctx) {
		_, err = n.registry().Put(ctx, n.o.ID, b)
	}
	return err
}
