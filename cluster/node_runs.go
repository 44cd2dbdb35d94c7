package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
)

// A node follows the run leases (run_lease.go): the agents of a run whose
// lease lapsed are stopped at once, their tasks dropped from the queue
// without a result (resume queues again those that never finished), and a
// task of such a run that arrives later is dropped unrun. A node counts a
// lease lapsed lapseEarly before it does: by the time the lease expires
// its agents are stopped, a sweep's delay included, and no model call is
// made for the run after that.

// lapseEarly is how much earlier than its lease a node counts a run's
// lease lapsed (and its orchestrator, RunLease.keep, counts its tasks
// dropped).
const lapseEarly = 2 * sweepEvery

// runLapsed reports whether task's run has a lease that lapsed. A run the
// node has not heard of, or heard of as lapsed, is looked up in the
// bucket: an absent entry is a run that ended or whose orchestrator is
// long gone.
func (n *Node) runLapsed(task actors.ChildTask) bool {
	if task.RunLeaseMS <= 0 {
		return false // a run without a lease (an older orchestrator)
	}
	if lapsed, known := n.runs.lapsed(task.Run, time.Now().Add(lapseEarly)); known && !lapsed {
		return false
	}
	// Unknown, or lapsed as far as the watch has told: ask the bucket (a
	// resumed run's new heartbeat may not have come through the watch yet).
	ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
	defer cancel()
	kv, err := n.o.Bus.JetStream().KeyValue(ctx, n.o.Bus.Names().Runs)
	if err != nil {
		return false // cannot tell: run it
	}
	e, err := kv.Get(ctx, task.Run)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return true
	}
	if err != nil {
		return false
	}
	n.runs.apply(e, time.Now(), true)
	lapsed, _ := n.runs.lapsed(task.Run, time.Now().Add(lapseEarly))
	return lapsed
}

// dropLapsed drops (terminates) a task whose run's lease lapsed before
// it started, and reports whether it did.
func (n *Node) dropLapsed(task actors.ChildTask, m jetstream.Msg, log zerolog.Logger) bool {
	if !n.runLapsed(task) {
		return false
	}
	n.stats.lapsed.Add(1)
	log.Info().Msg("task of a run whose lease lapsed (its orchestrator is gone) dropped unrun")
	_ = m.TermWithReason("the run's lease lapsed: its orchestrator is gone")
	return true
}

// onRunBeat records a run's heartbeat (its lease, on the run's beat
// subject).
func (n *Node) onRunBeat(m *nats.Msg) {
	n.runs.heard(m, time.Now())
}

// sweepRuns stops the agents of runs whose lease lapsed. While the node
// is cut off from the server it hears no lease, and judges none.
func (n *Node) sweepRuns() {
	n.every(sweepEvery, func(now time.Time) {
		if !n.o.Bus.NATS().IsConnected() {
			n.runs.hearAll(now)
			return
		}
		n.runs.prune(now)
		n.stopLapsed(now)
	})
}

// every calls fn every d until the node stops, then marks one of its
// loops done.
func (n *Node) every(d time.Duration, fn func(now time.Time)) {
	defer n.loops.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case now := <-t.C:
			fn(now)
		}
	}
}

// stopLapsed stops the running agents of runs whose lease lapsed.
func (n *Node) stopLapsed(now time.Time) {
	n.mu.Lock()
	var stop []*runningTask
	for _, rt := range n.running {
		if !rt.leased || rt.lapsed.Load() {
			continue
		}
		if lapsed, known := n.runs.lapsed(rt.run, now.Add(lapseEarly)); lapsed || !known {
			rt.lapsed.Store(true)
			rt.letGo()
			stop = append(stop, rt)
		}
	}
	n.mu.Unlock()
	for _, rt := range stop {
		n.o.Log.Warn().Str("run", rt.run).Str("agent", rt.agent).Msg("the run's lease lapsed (its orchestrator is gone): agent stopped")
		if h := n.handle(rt); h != nil {
			h.Cancel("the run's lease lapsed: its orchestrator is gone")
		}
	}
}

// followRuns follows the run leases: their heartbeats on the runs' beat
// subjects (subscribeControl), and the runs bucket, whose entries say
// which runs were live before the node started. A bucket that cannot be
// read yet (its stream electing a leader) is waited for a while; the
// heartbeats bring the live runs in meanwhile.
func (n *Node) followRuns(ctx context.Context) error {
	var ready <-chan struct{}
	err := awaitStart(ctx, n.o.Log, "follow the run leases", func(ctx context.Context) (err error) {
		ready, err = watchRunLeases(n.ctx, n.o.Bus, n.runs)
		return err
	})
	if err != nil {
		return err
	}
	select {
	case <-ready:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(runsReadWait):
		n.o.Log.Warn().Msg("the runs bucket has not been read yet (its stream electing a leader?): following the runs' heartbeats meanwhile")
	}
	return nil
}

// runsReadWait bounds how long a starting node waits for the runs bucket.
const runsReadWait = 10 * time.Second
