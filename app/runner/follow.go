package runner

import (
	"context"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/cluster"
	"github.com/troupe-ai/troupe/messages"
)

// followNodes feeds sinks the events of run's agents that run on nodes,
// from NATS, in order; the channel it returns closes after run.finished
// (or when the subscription ends). The run's own events reach the sinks
// in-process, so they are not taken from the bus a second time. The
// subscription ends after run.finished, or with stop (the run's Close):
// a process that runs many runs keeps no consumer of a run gone.
func followNodes(ctx context.Context, b *Bus, run string, sinks actors.Emitter) (fin chan struct{}, stop func(), err error) {
	es, err := b.conn.Events(ctx, bus.WatchOptions{Run: run, FromStart: true})
	if err != nil {
		return nil, nil, err
	}
	fin = make(chan struct{})
	go func() {
		defer close(fin)
		defer es.Stop()
		for d := range es.C {
			if fromNode(d.Event) {
				sinks.Emit(d.Event)
			}
			if d.Event.Type == messages.EvtRunFinished {
				return
			}
		}
	}()
	return fin, es.Stop, nil
}

// fromNode says whether ev was emitted on a node: its envelope names the
// node, and it is not one of the run's own events about nodes (agent
// cluster.NodesAgent, which this process's Remote emits when a node is
// lost or comes back).
func fromNode(ev messages.Event) bool {
	return ev.Node != "" && ev.Agent != cluster.NodesAgent
}
