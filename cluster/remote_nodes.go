package cluster

import (
	"context"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// sweepNodes finds the nodes that stopped heartbeating: each is reported
// lost (node.left), the run's tasks it held are handed to other nodes at
// once, and the leases it acquired are returned. A lost node heard from
// again is reported back (node.joined). While this process is cut off
// from the server, it hears no node and judges none.
func (r *Remote) sweepNodes() {
	defer r.sweeper.Done()
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case now := <-t.C:
			if !r.o.Bus.NATS().IsConnected() {
				r.nodes.hearAll(now)
				continue
			}
			for _, n := range r.nodes.returned() {
				r.nodeEv.emit(r.o.Run, n.ID, messages.EvtNodeJoined, messages.NodeJoined{Node: n.ID, Name: n.Name, Host: n.Host,
					Kinds: n.Kinds, Slots: n.Slots, Version: n.Version})
			}
			for _, n := range r.nodes.stale(now, r.o.LeaseTimeout) {
				r.nodeLost(n)
			}
		}
	}
}

// nodeLost reports n lost, hands its tasks on and returns its leases.
func (r *Remote) nodeLost(n messages.NodeInfo) {
	silent := nodeTimeout(n, r.o.LeaseTimeout)
	r.o.Log.Warn().Str("node", n.ID).Str("name", n.Name).Dur("silent_for", silent).Msg("node lost: no heartbeat")
	r.nodeEv.emit(r.o.Run, n.ID, messages.EvtNodeLeft, messages.NodeLeft{Node: n.ID, Name: n.Name, Reason: NodeLost})
	r.reclaim(n.ID)
	r.relaysLost(n.ID)
	r.mu.Lock()
	s := r.budget
	r.mu.Unlock()
	if s != nil {
		ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
		s.ReleaseNode(ctx, n.ID)
		cancel()
	}
}

// reclaim hands every waiting task that node holds to the other nodes.
func (r *Remote) reclaim(node string) {
	r.mu.Lock()
	var held []*remoteChild
	for _, c := range r.waiting {
		if c.holder() == node {
			held = append(held, c)
		}
	}
	r.mu.Unlock()
	for _, c := range held {
		c.reissue(node)
	}
}
