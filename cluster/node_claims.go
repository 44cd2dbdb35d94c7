package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
)

// A node cut off from the server (or paused) for longer than two of its
// heartbeats may have been found lost meanwhile, and its tasks handed to
// other nodes; the cancel that told it so was lost with the connection.
// So when its first heartbeat after such a gap gets through, it asks the
// queue for each task it runs: one that is no longer there was reissued
// (or settled) elsewhere, and this node's copy stops without a result.

// Self-fencing. The run hands a silent node's tasks to others once the
// node has gone without a heartbeat for two of them (or node.lease_timeout,
// which the task carries), and the queue delivers a task again AckWait
// after its last progress ack. A node cut off from the server (its
// connection stalled, not closed) hears neither, and would keep running
// the task while another node runs it too. So a node stops its running
// tasks, no result, no ack, once its heartbeats have not got through for
// three quarters of that time (fenceAfter), measured from when the last
// one that got through was sent (the run can only have heard it later):
// by the time another node may take a task over, its copy here is gone.
// A task delivered while the node is that silent is not started.

// fenceAfter is how long the node's heartbeats may fail to get through
// before it stops task: three quarters of the time after which the run
// hands the task on, or half its AckWait (a progress ack may have been
// lost a third of it before the silence began), whichever is shorter; but
// never under a heartbeat and a half, a healthy node's longest silence
// with some room (so an AckWait under three heartbeats, or a
// node.lease_timeout under two, leaves a window no fence covers).
func (n *Node) fenceAfter(task messages.Task) time.Duration {
	lost := 2 * n.o.Heartbeat // as the run judges (nodeTimeout)
	if task.LostMS > 0 {
		lost = time.Duration(task.LostMS) * time.Millisecond
	}
	return max(min(lost*3/4, n.o.AckWait/2), n.o.Heartbeat*3/2)
}

// cutOff reports (and logs) a task not to start: the node is silent for
// longer than the task's fenceAfter, so it may be handed to another node
// before a word of this one's gets through. It is left unsettled: the
// queue delivers it again after AckWait. fenceAt is the task's
// fenceAfter.
func (n *Node) cutOff(task messages.Task, log zerolog.Logger) (fenceAt time.Duration, cut bool) {
	fenceAt = n.fenceAfter(task)
	if silent := n.silence(time.Now()); silent > fenceAt {
		n.stats.fenced.Add(1)
		log.Warn().Dur("silent_for", silent).Msg("task not started: the node's heartbeats have not got through for too long")
		return fenceAt, true
	}
	return fenceAt, false
}

// silence is how long ago the last heartbeat that got through was sent.
func (n *Node) silence(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, n.beatSent.Load()))
}

// fence stops the running tasks once the node's silence passes their
// fenceAfter.
func (n *Node) fence() { n.every(fenceEvery, n.fenceSilent) }

// fenceEvery is how often the node compares its silence with its tasks'.
const fenceEvery = 100 * time.Millisecond

// fenceSilent stops the running tasks whose fenceAfter the node's silence
// passed by now.
func (n *Node) fenceSilent(now time.Time) {
	silent := n.silence(now)
	n.mu.Lock()
	var stop []*runningTask
	for _, rt := range n.running {
		if rt.fenceAt > 0 && silent > rt.fenceAt && !rt.revoked.Load() && !rt.lapsed.Load() {
			stop = append(stop, rt)
		}
	}
	n.mu.Unlock()
	for _, rt := range stop {
		n.stats.fenced.Add(1)
		rt.fenced.Store(true)
		n.revoke(rt.run, rt.agent, rt.attempt, fmt.Sprintf("claim given up: the node's heartbeats have not got through for %s, "+
			"and the run may hand the task to another node: agent stopped, its result dropped", silent.Round(time.Millisecond)))
	}
}

// releaseLater remembers a task this node gave up, to tell its run once
// a heartbeat gets through again (sendReleases).
func (n *Node) releaseLater(task messages.Task, d *delivery) {
	n.relMu.Lock()
	n.released = append(n.released, releasedTask{task, d})
	n.relMu.Unlock()
}

// releasedTask is a task given up, with the delivery it was given up in.
type releasedTask struct {
	task messages.Task
	d    *delivery
}

// sendReleases tells each given-up task's run that this node let it go:
// a run that still counts it the holder queues the task again at once.
func (n *Node) sendReleases() {
	n.relMu.Lock()
	out := n.released
	n.released = nil
	n.relMu.Unlock()
	for _, r := range out {
		go n.notify(r.task, r.d, messages.StartNotice{Node: n.o.ID, Name: n.o.Name, Attempt: r.task.Attempt,
			Released: "the node was cut off from the server and stopped the task without a result"})
	}
}

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
	held := slices.Collect(maps.Values(n.running))
	n.mu.Unlock()
	for _, rt := range held {
		if _, err := s.GetMsg(ctx, rt.seq); errors.Is(err, jetstream.ErrMsgNotFound) {
			n.revoke(rt.run, rt.agent, rt.attempt, "claim revoked: the node was silent for longer than two heartbeats, and the task is no longer its own")
		}
	}
}
