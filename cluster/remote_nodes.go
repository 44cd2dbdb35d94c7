package cluster

import (
	"context"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// sweepNodes finds the nodes that stopped heartbeating: each is reported
// lost (node.left) and the leases it acquired are returned. A lost node
// heard from again is reported back (node.joined).
func (r *Remote) sweepNodes() {
	defer r.sweeper.Done()
	t := time.NewTicker(r.o.LeaseTimeout / 4)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case now := <-t.C:
			for _, n := range r.nodes.returned() {
				r.nodeEv.emit(r.o.Run, n.ID, messages.EvtNodeJoined, messages.NodeJoined{Node: n.ID, Name: n.Name, Host: n.Host,
					Kinds: n.Kinds, Slots: n.Slots, Version: n.Version})
			}
			for _, n := range r.nodes.stale(now, r.o.LeaseTimeout) {
				r.o.Log.Warn().Str("node", n.ID).Str("name", n.Name).Dur("silent_for", r.o.LeaseTimeout).Msg("node lost: no heartbeat")
				r.nodeEv.emit(r.o.Run, n.ID, messages.EvtNodeLeft, messages.NodeLeft{Node: n.ID, Name: n.Name, Reason: NodeLost})
				r.mu.Lock()
				s := r.budget
				r.mu.Unlock()
				if s != nil {
					ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
					s.ReleaseNode(ctx, n.ID)
					cancel()
				}
			}
		}
	}
}
