package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/changes"
	"github.com/troupe-ai/troupe/telemetry"
	"github.com/troupe-ai/troupe/tools"
)

// AgentHandle is one agent started on its own with Host.StartAgent: what a node
// holds for a task it took from the queue. Its methods are safe for
// concurrent use.
type AgentHandle struct {
	rt      *runtime
	pid     *actor.PID
	results chan AgentResult
	result  AgentResult
	done    chan struct{}
}

// Host runs agents of any run that a process was handed (a node's tasks):
// it builds once what they share (one actor system, the workspace, the
// tool registry, the model router) so that starting an agent costs an
// actor spawn, not a new runtime. Its methods are safe for concurrent use.
type Host struct {
	base *runtime
}

// NewHost prepares o for running agents started with Host.StartAgent.
// o supplies what the agents share with a local one (workspace, model
// client and routing, kinds, settings, tool config, events, approver,
// placer for their own children, log, node name); o.Task, o.Resume and
// o.Budget are not used.
func NewHost(ctx context.Context, o Options) (*Host, error) {
	if o.Run == "" {
		o.Run = "host" // each agent gets its task's run
	}
	rt, err := newRuntime(ctx, &o, true)
	if err != nil {
		return nil, err
	}
	// Its agents' events go straight out: a host runs no run.finished, so
	// it keeps no last seq per agent (that map would grow with every task).
	rt.events, rt.seqs = rt.seqs.out, nil
	return &Host{base: rt}, nil
}

// Close stops the host's actor system, kills what its agents' tools may
// still have running and closes the workspace; call it once its agents
// have ended.
func (h *Host) Close() { h.base.shutdown() }

// StartAgent starts the agent a ChildTask describes, outside any team: its
// parent runs elsewhere and its lease (task.LeaseTokens) was granted by the
// run's budget, which svc serves (nil: no budget accounting). The agent's
// events carry the task's run, agent and parent IDs, so they join the
// run's stream as a local child's would. artifacts (nil: none)
// keeps its run's spilled outputs where other processes read them, and
// task.Limits and task.Budget, when set, replace the host's limits and
// budget rules for this agent.
func (h *Host) StartAgent(task ChildTask, svc budget.Service, artifacts tools.ArtifactStore) (*AgentHandle, error) {
	return h.startAgent(context.Background(), task, svc, artifacts, nil, nil)
}

// StartAgentUnder is StartAgent for an agent whose invoke_agent span (when
// tracing is on) goes under the span context in trace: its remote
// parent's delegate call, extracted from the task's message headers
// (telemetry.Extract). trace carries only that; the agent's life is not
// bound to it.
func (h *Host) StartAgentUnder(trace context.Context, task ChildTask, svc budget.Service, artifacts tools.ArtifactStore) (*AgentHandle, error) {
	return h.startAgent(trace, task, svc, artifacts, nil, nil)
}

// startAgent is StartAgentUnder with the agent working in ws (nil: the
// host's workspace), its events going to events (nil: the host's).
func (h *Host) startAgent(trace context.Context, task ChildTask, svc budget.Service, artifacts tools.ArtifactStore, ws *tools.Workspace,
	events Emitter) (*AgentHandle, error) {
	if task.Run == "" || task.ID == "" || task.Kind == "" || task.Task == "" {
		return nil, errors.New("start agent: the task needs run, agent, kind and task")
	}
	k, ok := h.base.kinds[task.Kind]
	if !ok {
		return nil, fmt.Errorf("start agent: unknown kind %q", task.Kind)
	}
	if task.Tools != nil {
		// The parent trimmed the kind's tools (delegation at the depth
		// limit); a task can only narrow the kind, never widen it.
		k.Tools = slices.DeleteFunc(slices.Clone(k.Tools), func(t string) bool { return !slices.Contains(task.Tools, t) })
	}
	rt := *h.base // what differs per run: its ID, budget, artifacts and read cache
	rt.run, rt.artifacts, rt.budget = task.Run, artifacts, nil
	if events != nil {
		rt.events = events
		if !rt.redact.Empty() {
			rt.events = redactingEmitter{out: events, r: rt.redact}
		}
	}
	rt.cache = tools.NewCache(rt.toolCfg.CacheMaxAge)
	rt.subs = &subAgentTally{}
	if svc != nil {
		rt.budget = svc
	}
	if err := rt.applyLimits(task.Limits, task.Kind); err != nil {
		return nil, fmt.Errorf("start agent: %w", err)
	}
	rt.applyBudget(task.Budget)
	rt.log = rt.log.With().Str("run", task.Run).Logger()
	ah := &AgentHandle{rt: &rt, results: make(chan AgentResult, 1), done: make(chan struct{})}
	deliver := func(r AgentResult) { ah.results <- r }
	spec := agentSpec{id: task.ID, parent: task.Parent, kind: k, task: task.Task, context: task.Context,
		model: task.ModelOverride, parentModel: task.ParentModel, depth: task.Depth, background: task.Background,
		lease: task.LeaseTokens, attempt: task.Attempt, ws: ws, done: deliver,
		trace: telemetry.ParentFrom(trace)}
	// It works in ws (a node's worktree of its requester's snapshot), the
	// workspace of its children; their changes that do not merge there
	// leave with its result (changes.Outcome.Carried, in finish).
	var dir string
	if ws != nil {
		dir = ws.Root()
	}
	task0, err := rt.iso.Enter(context.Background(), nil, changes.Entry{Run: task.Run, ID: task.ID, Task: true, Dir: dir})
	if err != nil {
		return nil, fmt.Errorf("start agent: %w", err)
	}
	if task0 != nil {
		spec.iso = &isolated{Child: task0}
	}
	sys := rt.system
	ah.pid = sys.Root.SpawnPrefix(actor.PropsFromProducer(func() actor.Actor { return newAgent(&rt, spec) },
		actor.WithSupervisor(childStrategy())), "agent-"+task.Run+"-"+task.ID+"-")
	go func() {
		ah.result = <-ah.results
		_ = sys.Root.StopFuture(ah.pid).Wait()
		close(ah.done)
	}()
	return ah, nil
}

// Done is closed once the agent has ended and its lease is released.
func (h *AgentHandle) Done() <-chan struct{} { return h.done }

// Wait waits for the agent to end (cancelling it if ctx ends first) and
// returns its result.
func (h *AgentHandle) Wait(ctx context.Context) AgentResult {
	select {
	case <-h.done:
	case <-ctx.Done():
		h.Cancel("cancelled")
		<-h.done
	}
	return h.result
}

// Cancel asks the agent to stop; Wait returns once it has.
func (h *AgentHandle) Cancel(reason string) {
	h.rt.system.Root.Send(h.pid, &Cancel{Reason: reason})
}

// Status asks the agent for its state; it answers even mid-call.
func (h *AgentHandle) Status(ctx context.Context) (StatusReply, error) {
	res, err := h.rt.system.Root.RequestFuture(h.pid, &Status{}, askTimeout(ctx)).Result()
	if err != nil {
		return StatusReply{}, fmt.Errorf("status: %w", err)
	}
	st, ok := res.(*StatusReply)
	if !ok {
		return StatusReply{}, fmt.Errorf("status: unexpected reply %T", res)
	}
	return *st, nil
}

// SendInput steers the agent: message joins its conversation before its
// next round. It reports false when the agent has already ended.
func (h *AgentHandle) SendInput(ctx context.Context, message string) (bool, error) {
	res, err := h.rt.system.Root.RequestFuture(h.pid, &SendInput{Message: message}, askTimeout(ctx)).Result()
	if err != nil {
		return false, fmt.Errorf("send input: %w", err)
	}
	r, ok := res.(*SendInputReply)
	return ok && r.Accepted, nil
}

// askTimeout is ctx's remaining time, capped at actorAskTimeout.
func askTimeout(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return min(actorAskTimeout, max(time.Until(dl), time.Millisecond))
	}
	return actorAskTimeout
}
