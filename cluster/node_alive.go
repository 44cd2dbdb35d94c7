package cluster

import (
	"time"

	"github.com/rs/zerolog"
)

// Keeping a task alive. The queue delivers a task again once AckWait
// passes without an ack or a progress ack from the node holding it. A
// node keeps its claim alive from the moment it claims the task until it
// settles it: fetching and checking out the snapshot, running the agent,
// capturing its changes, flushing its outputs and publishing its result
// all count. Slow set-up on a loaded machine, or a large repository's
// bundle, would otherwise hand a running task to a second node.

// keepAlive starts sending rt's latest delivery a progress ack every
// third of AckWait (one lost or late ack does not cost the claim), until
// rt.quiet is called or the claim is revoked (another node may hold the
// task then: keeping this delivery alive would hold it back). Only the
// goroutine that runs the task calls keepAlive and quiet.
func (n *Node) keepAlive(rt *runningTask, log zerolog.Logger) {
	rt.alive, rt.aliveDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(rt.aliveDone)
		t := time.NewTicker(n.o.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-rt.alive:
				return
			case <-t.C:
			}
			if rt.revoked.Load() {
				return
			}
			if err := rt.latest().InProgress(); err != nil {
				// The server may have delivered the task again meanwhile; if
				// to this node, claim hands the new delivery to this copy.
				n.stats.progressLost.Add(1)
				log.Debug().Err(err).Msg("progress ack")
				continue
			}
			n.stats.progress.Add(1)
		}
	}()
}

// quiet stops rt's progress acks and waits until none is in flight: the
// delivery is about to be settled (acked, nak'ed or terminated).
func (rt *runningTask) quiet() {
	if rt.alive == nil {
		return
	}
	rt.quietOnce.Do(func() { close(rt.alive) })
	<-rt.aliveDone
}
