package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A node cut off from the server (or paused) for longer than two of its
// heartbeats may have been found lost meanwhile, and its tasks handed to
// other nodes; the cancel that told it so was lost with the connection.
// So when its first heartbeat after such a gap gets through, it asks the
// queue for each task it runs: one that is no longer there was reissued
// (or settled) elsewhere, and this node's copy stops without a result.

// checkClaims stops the running tasks that are no longer in the queue.
func (n *Node) checkClaims(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := n.o.Bus.JetStream().Stream(ctx, n.o.Bus.Names().Tasks)
	if err != nil {
		n.o.Log.Warn().Err(err).Msg("check the running tasks' claims after a silence")
		return
	}
	n.mu.Lock()
	held := make([]*runningTask, 0, len(n.running))
	for _, rt := range n.running {
		held = append(held, rt)
	}
	n.mu.Unlock()
	for _, rt := range held {
		if _, err := s.GetMsg(ctx, rt.seq); errors.Is(err, jetstream.ErrMsgNotFound) {
			n.revoke(rt.run, rt.agent, "claim revoked: the node was silent for longer than two heartbeats, and the task is no longer its own")
		}
	}
}
