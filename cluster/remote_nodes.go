package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
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
				r.nodeEv.emit(n.ID, messages.EvtNodeJoined, messages.NodeJoined{Node: n.ID, Name: n.Name, Host: n.Host,
					Kinds: n.Kinds, Slots: n.Slots, Version: n.Version})
			}
			for _, n := range r.nodes.stale(now, r.o.LeaseTimeout) {
				r.o.Log.Warn().Str("node", n.ID).Str("name", n.Name).Dur("silent_for", r.o.LeaseTimeout).Msg("node lost: no heartbeat")
				r.nodeEv.emit(n.ID, messages.EvtNodeLeft, messages.NodeLeft{Node: n.ID, Name: n.Name, Reason: NodeLost})
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

// runNodeEvents stamps a run's own events about nodes. The nodes' events
// cannot carry them: a node numbers its events in a run (task.redelivered)
// as agent = its ID, and a lost node may have used any seq there. So they
// have an agent of their own, NodesAgent, numbered from 1 by this Remote;
// Node names the node each is about.
type runNodeEvents struct {
	mu  sync.Mutex
	out actors.Emitter
	run string
	seq uint64
	log zerolog.Logger
}

func (e *runNodeEvents) emit(node, typ string, data any) {
	if e.out == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ev, err := messages.NewEvent(e.run, NodesAgent, typ, e.seq+1, data)
	if err != nil {
		e.log.Error().Err(err).Str("type", typ).Msg("build node event")
		return
	}
	e.seq++
	ev.Kind, ev.Node = "node", node
	e.out.Emit(ev)
}
