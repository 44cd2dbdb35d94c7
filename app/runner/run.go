// Package runner builds and runs an orchestrator run: its configuration
// with the command line's overrides, its NATS (embedded or external), the
// team's options, remote placement, and the sinks that get the run's events
// in-process (the live view, the metrics, the prices seen). The commands of
// cmd/orchestrator parse their flags, call it and map its outcome to an exit
// code.
package runner

import (
	"context"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/cluster"
	"github.com/troupe-ai/troupe/watch"
)

// Params is a run to start on a bus.
type Params struct {
	// Options are the team's, with Run set. Start fills in Events,
	// EventsDropped, and Placer and OnBudget when a kind may run on nodes.
	Options      actors.Options
	Placement    map[string]string // kind → local, remote or auto
	LeaseTimeout time.Duration     // a node silent this long is lost (0: two of its heartbeats)
	RunLease     time.Duration     // the run's lease: nodes stop its agents once it lapses (0: the default)
	// PlacementTimeout: a remote task not started while no live node
	// serves its kind fails after this long (node.placement_timeout).
	PlacementTimeout time.Duration
	// Sinks get every event of the run in-process, as it is emitted, and
	// the events of agents running on nodes as they arrive from NATS.
	Sinks []actors.Emitter
	Log   zerolog.Logger
}

// Run is a run ready to execute: its options, and what it measures.
type Run struct {
	// Options are what Execute runs; a command may still set the approver.
	Options actors.Options
	// Metrics are the run's tool and token metrics, fed in-process.
	Metrics *watch.MetricsCollector

	bus       *Bus
	prices    *pricingWatch
	remote    *cluster.Remote
	lease     *cluster.RunLease
	placement map[string]string // kind → where, for the resume command
	fromNodes chan struct{}     // closed when the bus delivered run.finished; nil without nodes
	stopNodes func()            // ends the subscription fromNodes reads; nil without nodes
	closers   []func()
}

// Start wires p's run to b: its events go to the sinks (in-process) and to
// NATS (for other processes); with a kind placed on nodes it starts the
// remote placement and follows the events of the agents that run there.
func Start(ctx context.Context, b *Bus, p Params) (*Run, error) {
	r := &Run{Options: p.Options, Metrics: watch.NewMetricsCollector(), bus: b, prices: &pricingWatch{}, placement: p.Placement}
	local := append(actors.Emitters{actors.EmitterFunc(r.Metrics.Apply), r.prices}, p.Sinks...)
	r.Options.Events = actors.Emitters{actors.LogEmitter{Log: p.Log}, local, b.pub}
	r.Options.EventsDropped = b.Dropped
	lease, err := cluster.StartRunLease(ctx, b.conn, r.Options.Run, p.RunLease, p.Log)
	if err != nil {
		return nil, err
	}
	r.lease, r.Options.RunLease = lease, lease.Lease()
	remote, err := startPlacement(ctx, b, p, r.Options)
	if err != nil {
		lease.Stop()
		return nil, Usage("%v", err)
	}
	if remote == nil {
		return r, nil
	}
	lease.OnRegain(remote.ReissueAll)
	r.remote = remote
	r.Options.Placer, r.Options.OnBudget = remote.Placer(), remote.ServeBudget
	if r.fromNodes, r.stopNodes, err = followNodes(ctx, b, r.Options.Run, local); err != nil {
		remote.Close()
		lease.Stop()
		return nil, err
	}
	return r, nil
}

// Execute runs the team. When agents ran on nodes, it then waits (up to
// 5 s) for their last events to come in from NATS. A run that ended with
// nothing left to resume (no checkpoint kept) has its task records
// deleted when it closes; any other keeps them for resume.
func (r *Run) Execute(ctx context.Context) (actors.Result, error) {
	res, err := actors.Run(ctx, r.Options)
	waitFor(r.fromNodes, 5*time.Second)
	if err == nil && res.Checkpoint == "" && r.remote != nil {
		r.remote.Ended()
	}
	return res, err
}

// Unpriced lists the models that answered without a price, so totals can
// say "cost unknown" instead of a wrong $0.
func (r *Run) Unpriced() []string { return r.prices.models() }

// RemoteStats are the results the run refused or dropped from nodes (nil
// when no kind was placed on nodes).
func (r *Run) RemoteStats() *cluster.RemoteStats {
	if r.remote == nil {
		return nil
	}
	st := r.remote.Stats()
	return &st
}

// Bus is the run's NATS.
func (r *Run) Bus() *Bus { return r.bus }

// Close stops following the nodes' events and the remote placement, then
// whatever Prepare opened (the bus, the MCP servers), in reverse order,
// and last the model client's idle connections.
func (r *Run) Close() {
	if r.stopNodes != nil {
		r.stopNodes()
	}
	if r.remote != nil {
		r.remote.Close()
	}
	if r.lease != nil {
		r.lease.Stop()
	}
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
	// The model client's idle connections go with the run: a process
	// that runs many runs (mcp, a soak) would otherwise keep a
	// connection and two goroutines per run until they time out.
	if c, ok := r.Options.Client.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// waitFor waits (up to d) until fin is closed; a nil fin is closed.
func waitFor(fin chan struct{}, d time.Duration) {
	if fin == nil {
		return
	}
	select {
	case <-fin:
	case <-time.After(d):
	}
}
