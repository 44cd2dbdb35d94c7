package actors

import (
	"context"

	"fmt"
	"runtime/debug"
	"time"

	"github.com/troupe-ai/troupe/changes"
	"github.com/troupe-ai/troupe/messages"

	"github.com/asynkron/protoactor-go/actor"
)

// ChildTask is everything needed to start a child agent, in plain values:
// what a Placer decides on, and what a remote placement sends over the wire
// (it is the wire type messages.Task). The lease for it is acquired before
// it is placed.
type ChildTask = messages.Task

// Placer decides where a child agent runs. Place is called on the
// delegating tool step's goroutine once the child's lease is granted and
// before the child enters the workspace lifecycle (a child placed on a
// node gets no local worktree); parents call it at once, so it must be
// safe for concurrent use, and it must answer
// quickly (a cached view of live nodes, not a network round trip per
// call). A nil RemoteChild means "here, as a local actor", which is what
// LocalPlacer always answers. ctx carries the span of the delegate call
// that asked for the child (when tracing is on), for a remote placement
// to pass on with the task (telemetry.Inject). A RemoteChild is driven by a proxy actor
// that stands for the child in its parent, so the parent's delegate,
// check_agent, send_input and cancel_agent code is the same either way.
type Placer interface {
	Place(ctx context.Context, task ChildTask) (RemoteChild, error)
}

// RunCanceller is implemented by a Placer whose children run elsewhere
// and can all be told at once that their run is cancelled (the remote
// placer publishes the run-wide cancel). Team.Cancel calls it.
type RunCanceller interface {
	CancelRun(reason string)
}

// RunEnder is implemented by a Placer that emits events of the run
// beside its agents' (the remote placer's node.left and node.joined of
// the run's nodes, and the events its nodes relay). Team.Wait calls
// EndRun once the root has ended, before it settles the events
// (Options.EventsDropped) and emits run.finished: a Placer emits nothing
// into the run after it returns (the remote placer first waits, bounded,
// for its nodes' relays to end, and refuses what they send later). With
// an emitter that stores a run's run.finished after every earlier event
// of the run (bus.Publisher), every event of the run is stored ahead of
// its run.finished, where a watcher that stops at run.finished reads it.
type RunEnder interface {
	EndRun()
}

// LocalPlacer runs every child in this process. It is the default.
type LocalPlacer struct{}

// Place answers "local".
func (LocalPlacer) Place(context.Context, ChildTask) (RemoteChild, error) { return nil, nil }

// RemoteChild is a child agent that runs outside this process (on a node).
// The proxy actor calls Start once, from a goroutine of its own; Start
// returns when the child has ended, with its result (a failed or lost
// remote child is a result with StatusFailed, not an error: the error
// return is for a child that could not be started at all). Cancel must
// make a running Start return promptly. Status and SendInput are answered
// from the remote side or from what the proxy last heard.
type RemoteChild interface {
	Start(ctx context.Context) (AgentResult, error)
	Status(ctx context.Context) (StatusReply, error)
	SendInput(ctx context.Context, message string) (accepted bool, err error)
	Cancel(reason string)
}

// proxy is the actor that stands for a remote child in its parent: it
// answers the child protocol (Cancel, Status, SendInput) by relaying to
// the RemoteChild, and reports the child's end like a local agent does.
type proxy struct {
	rt     *runtime
	task   ChildTask
	remote RemoteChild
	done   func(AgentResult)
	// parentEv are the parent's events, where what became of the child's
	// changes is told; iso is its part in the workspace lifecycle.
	parentEv *agentEvents
	iso      *isolated

	ctx    context.Context
	cancel context.CancelFunc
	ended  bool
}

// remoteEnded carries the remote child's end back to its proxy.
type remoteEnded struct {
	result AgentResult
	err    error
}

// Receive implements actor.Actor.
func (p *proxy) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		p.ctx, p.cancel = context.WithCancel(p.rt.ctx)
		self, root := c.Self(), p.rt.system.Root
		go func() {
			defer func() {
				if v := recover(); v != nil {
					p.iso.end(p.parentEv, changes.Ending{NotStarted: true}) // once: nothing if it had ended
					root.Send(self, &remoteEnded{err: fmt.Errorf("remote child panicked: %v\n%s", v, debug.Stack())})
				}
			}()
			r, err := p.remote.Start(p.ctx)
			endRemote(p.iso, p.parentEv, &r, err)
			// The lease comes back before the result goes out, as for a
			// local child (a remote node may have released it already).
			p.rt.releaseLease(p.task.ID, int64(r.Usage.Total()), 0, nil)
			root.Send(self, &remoteEnded{result: r, err: err})
		}()
	case *remoteEnded:
		r := m.result
		if m.err != nil {
			r = AgentResult{Status: StatusFailed, Reason: ReasonError, Err: m.err.Error()}
			if p.ctx.Err() != nil {
				r = AgentResult{Status: StatusCancelled, Reason: ReasonCancelled}
			}
		}
		p.endUnspoken(r)
		p.end(c, r)
	case *Cancel:
		p.remote.Cancel(m.Reason)
	case *Status:
		p.relay(c, func(ctx context.Context) any {
			st, err := p.remote.Status(ctx)
			if err != nil {
				return &StatusReply{Agent: p.task.ID, Kind: p.task.Kind, Model: p.task.Model}
			}
			return &st
		})
	case *SendInput:
		p.relay(c, func(ctx context.Context) any {
			ok, err := p.remote.SendInput(ctx, m.Message)
			return &SendInputReply{Accepted: ok && err == nil}
		})
	case *actor.Stopping:
		if !p.ended {
			p.remote.Cancel("parent stopped")
		}
	case *actor.Stopped:
		if p.cancel != nil {
			p.cancel()
		}
		if !p.ended {
			p.ended = true
			go func() {
				p.rt.releaseLease(p.task.ID, 0, 0, nil)
				p.deliver(AgentResult{Status: StatusCancelled, Reason: ReasonCancelled})
			}()
		}
	}
}

// relay answers a request from a goroutine, so the proxy's mailbox never
// waits on the network.
func (p *proxy) relay(c actor.Context, ask func(context.Context) any) {
	sender, root := c.Sender(), p.rt.system.Root
	if sender == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
		defer cancel()
		root.Send(sender, ask(ctx))
	}()
}

// endUnspoken emits the terminal event of a remote child whose end no
// node told: one that never started (no node took it, placement timed
// out, every node refused it, its task could not be queued), was
// cancelled while queued, or whose node stopped before its end. A result
// that names its node comes from that node's agent, which emitted its own
// end. So every spawned child ends in the events, with the reason.
func (p *proxy) endUnspoken(r AgentResult) {
	if r.Node != "" || p.ended {
		return
	}
	typ := messages.EvtAgentFailed
	switch r.Status {
	case StatusCancelled:
		typ = messages.EvtAgentCancelled
	case StatusFailed:
	default:
		return
	}
	ev := newAgentEvents(p.rt.events, p.rt.run, p.task.ID, p.task.Parent, p.task.Kind, p.rt.node, p.rt.log)
	ev.emit(typ, messages.AgentEnded{Status: r.Status, Reason: r.Reason, Model: p.task.Model, Error: r.Err})
}

func (p *proxy) end(c actor.Context, r AgentResult) {
	if p.ended {
		return
	}
	p.ended = true
	p.deliver(r)
	c.Stop(c.Self())
}

func (p *proxy) deliver(r AgentResult) {
	r.Agent, r.Kind = p.task.ID, p.task.Kind
	if r.Model == "" {
		r.Model = p.task.Model
	}
	if p.done != nil {
		done := p.done
		p.done = nil
		done(r)
	}
}
