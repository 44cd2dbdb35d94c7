package actors

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/troupe-ai/troupe/internal/text"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"github.com/troupe-ai/troupe/messages"
	agenttools "github.com/troupe-ai/troupe/tools/agent"
)

// child is a parent's record of one child agent.
type child struct {
	id         string
	kind       string
	model      string
	pid        *actor.PID
	background bool
	done       chan struct{} // closed when result is set
	result     AgentResult
	panicked   string // the panic reason, from HandleFailure
}

// children tracks an agent's children. Only the parent actor touches the
// map; the done channels are how the tool goroutines wait.
type children struct {
	byID map[string]*child
	// pendingFinish is the parent's own result, held while it waits for
	// background children (on_parent_finish: wait).
	pendingFinish *AgentResult
	// closing is the parent's own result once it has ended, held until
	// the children it cancelled have ended too (see finish).
	closing *AgentResult
}

// Messages between a parent's tool goroutines and the parent actor.
type (
	prepareChild struct {
		req agenttools.DelegateRequest
	}
	prepared struct {
		spec agentSpec
		err  error
	}
	spawnChild struct {
		spec   agentSpec
		placed placement
	}
	spawned struct {
		ch  *child
		err error
	}
	lookupChild struct{ id string }
	childEnded  struct {
		id     string
		result AgentResult
	}
)

func (k *children) cancelAll(c actor.Context) {
	if k == nil {
		return
	}
	for _, ch := range k.byID {
		if !isClosed(ch.done) {
			c.Send(ch.pid, &Cancel{Reason: "parent cancelled"})
		}
	}
}

// settle is called when the parent ends: running children are cancelled
// (their results still arrive, and their leases come back).
func (k *children) settle(c actor.Context, a *agent) {
	if k == nil {
		return
	}
	for _, ch := range k.byID {
		if !isClosed(ch.done) {
			c.Send(ch.pid, &Cancel{Reason: "parent ended"}) // it emits its own agent.cancelled
		}
	}
}

func (k *children) running() int {
	if k == nil {
		return 0
	}
	n := 0
	for _, ch := range k.byID {
		if !isClosed(ch.done) {
			n++
		}
	}
	return n
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// receiveDelegation handles the parent side of the child protocol.
func (a *agent) receiveDelegation(c actor.Context, msg any) {
	switch m := msg.(type) {
	case *prepareChild:
		spec, err := a.newChildSpec(m.req)
		c.Respond(&prepared{spec: spec, err: err})
	case *spawnChild:
		c.Respond(a.spawn(c, m.spec, m.placed))
	case *settleExpired:
		if a.kids != nil {
			for _, ch := range a.kids.byID {
				if !isClosed(ch.done) {
					c.Stop(ch.pid)
				}
			}
		}
	case *lookupChild:
		if a.kids == nil || a.kids.byID[m.id] == nil {
			c.Respond(&spawned{err: fmt.Errorf("no agent %q among the agents you started; known: %s", m.id, a.kidIDs())})
			return
		}
		c.Respond(&spawned{ch: a.kids.byID[m.id]})
	case *childEnded:
		a.onChildEnded(c, m)
	case *actor.Terminated:
		// A child stopped; its result came (or comes) through childEnded.
	}
}

func (a *agent) kidIDs() string {
	if a.kids == nil || len(a.kids.byID) == 0 {
		return "none"
	}
	ids := make([]string, 0, len(a.kids.byID))
	for id := range a.kids.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return strings.Join(ids, ", ")
}

// spawn starts a child where it was placed (agentDelegator.place): a
// local agent actor, or a proxy actor for a remote one. Either is a
// protoactor child of this agent that speaks the same protocol. The
// lease was acquired by the caller, with this agent as its holder until
// the child releases it.
func (a *agent) spawn(c actor.Context, spec agentSpec, pl placement) *spawned {
	if a.ended {
		return &spawned{err: fmt.Errorf("agent %s has ended", a.spec.id)}
	}
	if a.kids == nil {
		a.kids = &children{byID: map[string]*child{}}
	}
	ch := &child{id: spec.id, kind: spec.kind.Name, background: spec.background, done: make(chan struct{}),
		model: pl.model}
	parent := c.Self()
	root := a.rt.system.Root
	spec.done = func(r AgentResult) { root.Send(parent, &childEnded{id: spec.id, result: r}) }
	spec.parentEv = a.ev
	producer := func() actor.Actor { return newAgent(a.rt, spec) }
	where := "local"
	if pl.remote != nil {
		// A remote child works in its node's worktree of the task's
		// snapshot (it entered the lifecycle as placed elsewhere: no
		// worktree here); its changes come back with its result (proxy).
		producer = func() actor.Actor {
			return &proxy{rt: a.rt, task: pl.task, remote: pl.remote, done: spec.done, parentEv: spec.parentEv, iso: spec.iso}
		}
		where = "remote"
	}
	pid, err := c.SpawnNamed(actor.PropsFromProducer(producer, actor.WithSupervisor(childStrategy())), spec.id)
	if err != nil {
		return &spawned{err: fmt.Errorf("spawn %s: %w", spec.id, err)}
	}
	ch.pid = pid
	a.kids.byID[spec.id] = ch
	a.ev.emit(messages.EvtAgentSpawned, messages.AgentSpawned{Child: spec.id, Kind: spec.kind.Name, Model: ch.model,
		Task: text.Clip(spec.task, 500), Background: spec.background, Depth: spec.depth, Placement: where})
	return &spawned{ch: ch}
}

// childTask is the plain-value form of a child's spec, for the Placer.
func (s agentSpec) childTask(run, model string) ChildTask {
	return ChildTask{V: messages.ProtocolVersion, Run: run, ID: s.id, Parent: s.parent, Kind: s.kind.Name, Task: s.task, Context: s.context,
		Model: model, ModelOverride: s.model, ParentModel: s.parentModel, Depth: s.depth, Background: s.background,
		Tools: slices.Clone(s.kind.Tools), LeaseTokens: s.lease}
}

func (a *agent) onChildEnded(c actor.Context, m *childEnded) {
	if a.kids == nil {
		return
	}
	ch := a.kids.byID[m.id]
	if ch == nil || isClosed(ch.done) {
		return
	}
	ch.result = m.result
	if ch.panicked != "" {
		ch.result.Status, ch.result.Reason = StatusFailed, ReasonError
		ch.result.Err = "agent crashed: " + ch.panicked
	}
	a.rt.subs.add(m.id, ch.result)
	close(ch.done)
	a.closeIfSettled(c)
	if a.kids.pendingFinish != nil && a.kids.running() == 0 {
		r := *a.kids.pendingFinish
		a.kids.pendingFinish = nil
		a.finish(c, r)
	}
}

// HandleFailure makes the agent its children's supervisor: a child whose
// Receive panicked is stopped, never restarted (a restart would drop the
// failing message and reset the conversation), and its parent records
// why, so the waiting call gets an error result.
func (a *agent) HandleFailure(sys *actor.ActorSystem, sup actor.Supervisor, who *actor.PID,
	rs *actor.RestartStatistics, reason, msg any) {
	if a.kids != nil {
		for _, ch := range a.kids.byID {
			if ch.pid != nil && ch.pid.Equal(who) {
				ch.panicked = fmt.Sprint(reason)
			}
		}
	}
	a.log.Error().Str("child", who.Id).Interface("reason", reason).Str("message", fmt.Sprintf("%T", msg)).Msg("child agent crashed; stopping it")
	sup.StopChildren(who)
}

// newChildSpec validates a delegate request and builds the child's spec.
func (a *agent) newChildSpec(req agenttools.DelegateRequest) (agentSpec, error) {
	kind, ok := a.rt.kinds[req.Type]
	if !ok || req.Type == KindRoot {
		return agentSpec{}, fmt.Errorf("unknown agent type %q; available: %s", req.Type, strings.Join(a.rt.delegableKinds(), ", "))
	}
	if a.phase == PhasePlan && !kind.ReadOnly {
		return agentSpec{}, fmt.Errorf("%s agents can only be delegated after submit_plan; while planning, delegate read-only types (%s)",
			req.Type, strings.Join(a.rt.readOnlyKinds(), ", "))
	}
	// A read-only agent's whole sub-tree is read-only: it may start only
	// read-only kinds, so nothing it starts changes files either.
	if a.spec.kind.ReadOnly && !kind.ReadOnly {
		return agentSpec{}, fmt.Errorf("%s agents are read-only and can delegate only read-only types (%s), not %s",
			a.spec.kind.Name, strings.Join(a.rt.readOnlyKinds(), ", "), req.Type)
	}
	depth := a.spec.depth + 1
	if depth > a.rt.settings.DepthLimit() {
		return agentSpec{}, fmt.Errorf("delegation depth limit reached (%d)", a.rt.settings.DepthLimit())
	}
	if !kind.MayDelegate || depth >= a.rt.settings.DepthLimit() {
		kind.Tools = slices.DeleteFunc(slices.Clone(kind.Tools), func(t string) bool { return slices.Contains(DelegationTools(), t) })
	}
	id := childID(a.rt.run, a.spec.id, kind.Name, a.round, req.CallID)
	return agentSpec{id: id, parent: a.spec.id, kind: kind, task: req.Task, context: req.Context,
		model: req.Model, parentModel: a.model, depth: depth, background: req.Background}, nil
}

// childID names a child: from its delegate call when the call has an ID
// (the same call, run again by a resumed run, names the same child, so a
// remote child's stored result is found again), else at random.
func childID(run, parent, kind string, round int, callID string) string {
	if callID == "" {
		return fmt.Sprintf("%s-%s", kind, strings.ReplaceAll(uuid.NewString(), "-", "")[:8])
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d\x00%s", run, parent, round, callID))
	return fmt.Sprintf("%s-%s", kind, hex.EncodeToString(sum[:])[:8])
}

func (rt *runtime) delegableKinds() []string {
	var out []string
	for n := range rt.kinds {
		if n != KindRoot {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func (rt *runtime) readOnlyKinds() []string {
	var out []string
	for n, k := range rt.kinds {
		if k.ReadOnly && n != KindRoot {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// mayDelegate reports whether this agent gets the delegation tools.
func (a *agent) mayDelegate() bool {
	return a.spec.kind.MayDelegate && a.spec.depth < a.rt.settings.DepthLimit()
}

// capText cuts a child's result for its parent, saying so.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := text.Cut(s, n)
	return cut + fmt.Sprintf("\n[result truncated: showing first %d of %d chars; ask the agent for a shorter answer or use a background agent and check_agent]", len(cut), len(s))
}
