package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/changes"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/telemetry"
	agenttools "github.com/troupe-ai/troupe/tools/agent"
)

// agentDelegator implements agenttools.Delegator for one agent. Its methods run
// on the agent's tool-step goroutine; they reach the agent actor through
// requests, never its fields, except the spec and phase, which do not
// change while a tool step runs.
type agentDelegator struct{ a *agent }

var _ agenttools.Delegator = agentDelegator{}

const actorAskTimeout = 30 * time.Second

func (d agentDelegator) Delegate(ctx context.Context, req agenttools.DelegateRequest) (agenttools.ChildReport, error) {
	a := d.a
	// The actor validates the request and builds the spec: the phase,
	// depth and model it reads are its own fields.
	res, err := a.rt.system.Root.RequestFuture(a.self, &prepareChild{req: req}, actorAskTimeout).Result()
	if err != nil {
		return agenttools.ChildReport{}, fmt.Errorf("start %s agent: %v", req.Type, err)
	}
	prep := res.(*prepared)
	if prep.err != nil {
		return agenttools.ChildReport{}, prep.err
	}
	spec := prep.spec
	spec.trace = telemetry.ParentFrom(ctx) // the delegate call's span, when tracing is on
	if a.rt.budget != nil {
		// One request: the lease is granted with this agent as its holder,
		// so it comes back if this agent dies before the child releases it.
		lease, err := a.rt.budget.Acquire(ctx, budget.Acquire{Agent: spec.id, Parent: a.spec.id,
			Kind: spec.kind.Name, Estimate: a.rt.settings.EstimateFor(spec.kind.Name), Holder: a.self},
			func(q budget.Queued) { a.ev.emit(messages.EvtBudgetWaiting, q.Wire(spec.kind.Name)) })
		if err != nil {
			if ctx.Err() != nil {
				return agenttools.ChildReport{}, ctx.Err()
			}
			return agenttools.ChildReport{}, fmt.Errorf("no budget for a new %s agent: %v", spec.kind.Name, err)
		}
		spec.lease = lease.Tokens
		a.ev.emit(messages.EvtBudgetAcquired, lease.Wire())
	}
	// Where the child runs is decided before it enters the workspace
	// lifecycle: one placed on a node gets no worktree here.
	pl, err := d.place(spec)
	if err == nil {
		spec.iso, err = enter(ctx, a.rt.iso, a.spec.iso, a.rt.run, spec, pl.remote != nil)
	}
	if err != nil {
		return agenttools.ChildReport{}, d.notStarted(ctx, spec, err)
	}
	if spec.iso == nil || spec.iso.ws == nil {
		spec.ws = a.spec.dir() // its parent's directory, when not the run's
	}
	res, err = a.rt.system.Root.RequestFuture(a.self, &spawnChild{spec: spec, placed: pl}, actorAskTimeout).Result()
	sp, _ := res.(*spawned)
	if err == nil && sp != nil {
		err = sp.err
	}
	if err != nil {
		spec.iso.end(nil, changes.Ending{NotStarted: true})
		return agenttools.ChildReport{}, d.notStarted(ctx, spec, err)
	}
	ch := sp.ch
	if req.Background {
		return agenttools.ChildReport{AgentID: ch.id, Kind: ch.kind, Model: ch.model, Status: StatusRunning}, nil
	}
	select {
	case <-ch.done:
		return d.report(ch), nil
	case <-ctx.Done():
		a.rt.system.Root.Send(ch.pid, &Cancel{Reason: "parent call cancelled"})
		return agenttools.ChildReport{}, ctx.Err()
	}
}

// placement is where a child runs, decided before it starts: its model,
// its task in plain values, and the RemoteChild that drives it on a node
// (nil: here).
type placement struct {
	model  string
	task   ChildTask
	remote RemoteChild
}

// place asks the run's Placer where the child spec describes runs (its
// lease granted). Nothing is started: a RemoteChild runs once its proxy
// calls Start. The delegate call's span rides with a remote placement to
// its node.
func (d agentDelegator) place(spec agentSpec) (placement, error) {
	rt := d.a.rt
	pl := placement{model: rt.pickModel(spec, 1)}
	pl.task = spec.childTask(rt.run, pl.model)
	pl.task.Limits, pl.task.Budget = rt.taskLimits(spec.kind.Name), rt.taskBudget()
	remote, err := rt.placer.Place(spec.trace.Context(d.a.ctx), pl.task)
	if err != nil {
		return placement{}, fmt.Errorf("place %s: %w", spec.id, err)
	}
	pl.remote = remote
	return pl, nil
}

// notStarted gives back the lease of a child that could not be started
// (why) and, unless the delegate call itself was cancelled, tells it on
// the bus and in the run's result (agent.notStarted); the error is what
// the parent's model reads.
func (d agentDelegator) notStarted(ctx context.Context, spec agentSpec, why error) error {
	d.releaseUnused(spec.id)
	if ctx.Err() == nil {
		d.a.notStarted(spec, why)
	}
	return fmt.Errorf("start %s agent: %v", spec.kind.Name, why)
}

// StatusRunning is a live child's status in check_agent.
const StatusRunning = "running"

func (d agentDelegator) releaseUnused(agent string) {
	if d.a.rt.budget == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = d.a.rt.budget.Release(ctx, budget.Release{Agent: agent})
}

func (d agentDelegator) lookup(ctx context.Context, id string) (*child, error) {
	res, err := d.a.rt.system.Root.RequestFuture(d.a.self, &lookupChild{id: id}, actorAskTimeout).Result()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("look up agent %s: %v", id, err)
	}
	sp := res.(*spawned)
	return sp.ch, sp.err
}

func (d agentDelegator) Check(ctx context.Context, id string, block bool, timeout time.Duration) (agenttools.ChildReport, error) {
	ch, err := d.lookup(ctx, id)
	if err != nil {
		return agenttools.ChildReport{}, err
	}
	if block {
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-ch.done:
		case <-t.C:
		case <-ctx.Done():
			return agenttools.ChildReport{}, ctx.Err()
		}
	}
	if isClosed(ch.done) {
		return d.report(ch), nil
	}
	rep := agenttools.ChildReport{AgentID: ch.id, Kind: ch.kind, Model: ch.model, Status: StatusRunning}
	if res, err := d.a.rt.system.Root.RequestFuture(ch.pid, &Status{}, 2*time.Second).Result(); err == nil {
		if st, ok := res.(*StatusReply); ok {
			rep.Rounds, rep.CurrentTool = st.Round, st.CurrentTool
			rep.Tokens, rep.Cost = st.PromptTokens+st.CompletionTokens, st.Cost
		}
	}
	return rep, nil
}

func (d agentDelegator) SendInput(ctx context.Context, id, message string) error {
	ch, err := d.lookup(ctx, id)
	if err != nil {
		return err
	}
	if isClosed(ch.done) {
		return fmt.Errorf("agent %s has already ended (%s); its result is available with check_agent", id, ch.result.Status)
	}
	res, err := d.a.rt.system.Root.RequestFuture(ch.pid, &SendInput{Message: message}, actorAskTimeout).Result()
	if err != nil {
		return fmt.Errorf("agent %s did not take the message: %v", id, err)
	}
	if r, ok := res.(*SendInputReply); !ok || !r.Accepted {
		return fmt.Errorf("agent %s has already ended", id)
	}
	return nil
}

func (d agentDelegator) Cancel(ctx context.Context, id string) (agenttools.ChildReport, error) {
	ch, err := d.lookup(ctx, id)
	if err != nil {
		return agenttools.ChildReport{}, err
	}
	if !isClosed(ch.done) {
		d.a.rt.system.Root.Send(ch.pid, &Cancel{Reason: agenttools.NameCancelAgent})
		select {
		case <-ch.done:
		case <-ctx.Done():
			return agenttools.ChildReport{}, ctx.Err()
		}
	}
	return d.report(ch), nil
}

// report renders an ended child's result for its parent, capped.
func (d agentDelegator) report(ch *child) agenttools.ChildReport {
	r := ch.result
	model := r.Model
	if model == "" {
		model = ch.model
	}
	return agenttools.ChildReport{AgentID: ch.id, Kind: ch.kind, Model: model,
		Status: r.Status, Reason: r.Reason, Text: capText(r.Text, d.a.rt.settings.ResultLimit()) + changes.Note(r.Changes) + changes.NestedNote(ch.id, r.NestedChanges), Plan: r.Plan,
		Err: r.Err, Rounds: r.Rounds, Tokens: r.Usage.Total(), Cost: r.Cost, Changed: r.Changed, Node: r.Node}
}
