package cluster

import (
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/messages"
)

// NodesRun is the run ID of node lifecycle events (node.joined, node.left),
// which belong to no run: troupe.evt.nodes.<node>.<type>.
const NodesRun = "nodes"

// NodesAgent is the agent ID of a run's own events about nodes: the
// orchestrator's Remote emits node.left (reason NodeLost) in the run when
// a node stops heartbeating, and node.joined when a lost node beats
// again, with the node's ID in the envelope's node field.
const NodesAgent = "nodes"

// Reasons of node.left.
const (
	NodeDrained = "drained" // the node drained and left the registry (its own event, run "nodes")
	NodeLost    = "lost"    // a run's orchestrator heard no heartbeat for its lease timeout (the run's event)
)

// nodeEvents stamps events about nodes: kind "node", the node each is
// about in the envelope's node field, and one agent whose seq counts per
// run from 1. A node stamps its own events as agent = its ID; a run's
// Remote stamps its events about lost nodes as agent NodesAgent, since a
// lost node may have used any seq of its own in that run. Nil out emits
// nothing.
//
// A node emits into a run only on redeliveries, so few runs have a count;
// a run's count is forgotten once it has been idle for nodeSeqKeep and
// more than nodeSeqMax runs are counted (a run that long quiet has ended).
type nodeEvents struct {
	mu    sync.Mutex
	out   actors.Emitter
	agent string
	seq   map[string]runSeq // by run
	log   zerolog.Logger
	quiet bool // silence was called: nothing more is emitted
}

type runSeq struct {
	n    uint64
	last time.Time
}

const (
	nodeSeqKeep = time.Hour
	nodeSeqMax  = 256
)

func newNodeEvents(out actors.Emitter, agent string, log zerolog.Logger) *nodeEvents {
	return &nodeEvents{out: out, agent: agent, seq: map[string]runSeq{}, log: log}
}

func (e *nodeEvents) emit(run, node, typ string, data any) {
	e.emitAt(run, node, typ, data, time.Now(), nil)
}

// emitAlso is emit, the event going to also too (a task's relay to its
// requester, or the node's publisher).
func (e *nodeEvents) emitAlso(also actors.Emitter, run, node, typ string, data any) {
	e.emitAt(run, node, typ, data, time.Now(), also)
}

func (e *nodeEvents) emitAt(run, node, typ string, data any, now time.Time, also actors.Emitter) {
	if e.out == nil && also == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.quiet {
		return
	}
	ev, err := messages.NewEvent(run, e.agent, typ, e.seq[run].n+1, data)
	if err != nil {
		e.log.Error().Err(err).Str("type", typ).Msg("build node event")
		return
	}
	if len(e.seq) >= nodeSeqMax {
		for r, s := range e.seq {
			if now.Sub(s.last) > nodeSeqKeep {
				delete(e.seq, r)
			}
		}
	}
	e.seq[run] = runSeq{n: ev.Seq, last: now}
	ev.Kind, ev.Node = "node", node
	if e.out != nil {
		e.out.Emit(ev)
	}
	if also != nil {
		also.Emit(ev)
	}
}

// silence makes e emit nothing more; an event being emitted when it is
// called has been handed to the emitters when it returns.
func (e *nodeEvents) silence() {
	e.mu.Lock()
	e.quiet = true
	e.mu.Unlock()
}

// runs is how many runs have a count.
func (e *nodeEvents) runs() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.seq)
}
