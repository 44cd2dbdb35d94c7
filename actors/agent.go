package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors/convo"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/telemetry"
	"github.com/troupe-ai/troupe/tools"
	agenttools "github.com/troupe-ai/troupe/tools/agent"
	"github.com/troupe-ai/troupe/tools/web"
)

// agentSpec is what a new agent actor is started with.
type agentSpec struct {
	id, parent  string
	kind        Kind
	task        string
	context     string // the parent's context, injected as a system message
	model       string // explicit model override ("" routes by kind)
	parentModel string
	depth       int
	background  bool
	lease       int64 // tokens granted to the agent's budget lease
	attempt     int   // a remote task's delivery attempt (0 for local agents)
	resume      *convo.Checkpoint
	// iso is the agent's part in the workspace lifecycle and its own
	// worktree, if it has one (nil: the run's root, which works in the
	// workspace); parentEv are its parent's events, where what became of
	// its changes is told.
	iso *isolated
	// ws is the workspace the agent works in instead of the run's (a
	// node's worktree of the requester's snapshot; nil: the run's).
	ws       *tools.Workspace
	parentEv *agentEvents
	// trace is the span its invoke_agent span goes under: its parent's
	// delegate call (a remote parent's, on a node); zero for a root.
	trace telemetry.Parent
	// done is called once when the agent ends, after its last checkpoint
	// is written (from a goroutine of its own).
	done func(AgentResult)
}

// agent is one agent actor. Its fields are touched only by its own
// Receive, except the conversation, which belongs to the one step
// goroutine running at a time (model step or tool step) and comes back
// with its completion message.
type agent struct {
	rt   *runtime
	spec agentSpec
	log  zerolog.Logger
	ev   *agentEvents

	ctx    context.Context // holds the agent's span, when tracing is on
	cancel context.CancelFunc
	self   *actor.PID
	span   telemetry.Span // invoke_agent; ended by finalize

	conv        *convo.Conversation
	session     *tools.Session
	phase       string
	round       int
	planRounds  int
	model       string
	usage       llm.Usage
	cost        float64
	unpriced    bool // a model call had no price: cost says too little
	toolCalls   int64
	bestText    string
	busy        bool    // a step goroutine owns the conversation
	currentTool toolNow // set by the tool step's goroutines, read by Status
	wrapUp      bool    // the budget is exhausted: the next round is the last
	budgetLeft  int64   // the lease's tokens left when it was found exhausted
	budgetLost  error   // the run's budget stopped answering: no further model call
	// A model call's charge made off the round's path (usage.go): the
	// next round waits for its answer. usageOut is the charges whose
	// answers the actor has not taken (onModel counts one up, onUsage one
	// down, in whichever order they arrive); unapplied the tool calls
	// those answers charged.
	usageOut       int
	startDeferred  bool
	usageWG        sync.WaitGroup
	unapplied      atomic.Int64
	finalRound     bool
	doom           doomState // doom-loop detection, carried through tool steps
	pendingInput   []string
	ended          bool
	plan           *agenttools.Plan
	kids           *children
	ckpt           *checkpointer
	curTools       *phaseTools     // the current phase's tools
	sourced        []tools.Tool    // its tool sources' tools (MCP servers), listed before round 1
	loaded         map[string]bool // deferred tools it loaded (search_tools, or by calling them)
	unchargedCalls int64           // tool calls not yet charged to the budget
	changed        map[string]bool // paths changed by its file tools
	refusedOnce    bool            // a model answer of its was refused (llm.refused): the next one fails it
}

func newAgent(rt *runtime, spec agentSpec) *agent {
	return &agent{rt: rt, spec: spec,
		log: rt.log.With().Str("agent", spec.id).Str("kind", spec.kind.Name).Logger()}
}

// Receive handles the agent's messages. Nothing here blocks: model calls
// and tool batches run in goroutines that report back as messages.
func (a *agent) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.start(c)
	case *startRound:
		a.startRound(c)
	case *sourcesLoaded:
		a.onSourcesLoaded(c, m)
	case *modelDone:
		a.onModel(c, m)
	case *toolsDone:
		a.onTools(c, m)
	case *usageDone:
		a.onUsage(c, m)
	case *Cancel:
		a.onCancel(c, m)
	case *Status:
		c.Respond(a.status())
	case *SendInput:
		a.pendingInput = append(a.pendingInput, m.Message)
		c.Respond(&SendInputReply{Accepted: !a.ended})
	case *stepPanic:
		a.finish(c, AgentResult{Status: StatusFailed, Reason: ReasonError,
			Err: fmt.Sprintf("internal error in %s: %v", m.where, m.value)})
	case *actor.Stopping:
		if a.cancel != nil {
			a.cancel()
		}
	case *actor.Stopped:
		switch {
		case !a.ended:
			// Stopped from outside (its parent ended or the system shut
			// down): end like any agent, so nobody waits forever.
			a.ended = true
			a.finalize(AgentResult{Status: StatusCancelled, Reason: ReasonCancelled, Text: a.bestText})
		case a.kids != nil && a.kids.closing != nil:
			// Stopped while waiting for its cancelled children.
			r := *a.kids.closing
			a.kids.closing = nil
			a.finalize(r)
		}
	default:
		a.receiveDelegation(c, m)
	}
}

// start prepares the agent's session and conversation and starts round 1
// (or the round after a checkpoint's).
func (a *agent) start(c actor.Context) {
	a.self = c.Self()
	a.ctx, a.cancel = context.WithCancel(a.rt.ctx)
	if a.rt.tracer.Enabled() {
		a.ctx, a.span = a.rt.tracer.StartAgent(a.spec.trace.Context(a.ctx), telemetry.Agent{Run: a.rt.run, ID: a.spec.id,
			Parent: a.spec.parent, Kind: a.spec.kind.Name, Model: a.rt.pickModel(a.spec, 1), Node: a.rt.node, Provider: llm.ProviderOf(a.rt.client),
			Depth: a.spec.depth, Attempt: a.spec.attempt})
	}
	a.ev = newAgentEvents(a.rt.events, a.rt.run, a.spec.id, a.spec.parent, a.spec.kind.Name, a.rt.node, a.log).withAttempt(a.spec.attempt)
	if dir := a.spec.dir(); dir != nil {
		// An agent in a worktree of its own (here, or a node's of its
		// requester's snapshot): its tools, sandbox included, see that
		// worktree alone, and cache what they read there apart.
		a.session = a.rt.newSessionIn(a.spec.id, a.spec.kind.Name, dir)
		a.session.Cache = tools.NewCache(a.rt.toolCfg.CacheMaxAge)
	} else {
		a.session = a.rt.newSession(a.spec.id, a.spec.kind.Name)
	}
	store, err := a.rt.store(a.spec.id)
	if err != nil {
		a.finish(c, AgentResult{Status: StatusFailed, Reason: ReasonError, Err: err.Error()})
		return
	}
	a.ckpt = newCheckpointer(store, a.log, a.rt.written, func(ck *convo.Checkpoint, path string, err error) {
		if err != nil {
			a.log.Warn().Err(err).Int("round", ck.Round).Msg("checkpoint")
			return
		}
		a.ev.emit(messages.EvtCheckpointSaved, messages.CheckpointSaved{Round: ck.Round, Path: path})
	})
	if a.mayDelegate() {
		agenttools.UseDelegator(a.session, agentDelegator{a})
	}
	web.UseExtractor(a.session, agentExtractor{a})
	if _, ok := a.rt.approver.(Asker); ok {
		agenttools.UseAsker(a.session, agentAsker{a})
	}
	a.phase = PhaseExecute
	if a.spec.kind.PlanFirst && a.rt.settings.PlansFirst(a.spec.kind.Name) {
		a.phase = PhasePlan
	}
	if err := a.initConversation(); err != nil {
		a.finish(c, AgentResult{Status: StatusFailed, Reason: ReasonError, Err: err.Error()})
		return
	}
	a.ev.emit(messages.EvtAgentStarted, messages.AgentStarted{Task: a.spec.task, Depth: a.spec.depth, Phase: a.phase,
		Round: a.round, Tools: a.toolNames(), Resumed: a.spec.resume != nil, Background: a.spec.background})
	if srcs := a.sources(); len(srcs) > 0 {
		a.busy = true          // a cancel now ends the agent once the sources answer
		go a.loadSources(srcs) // then resumes a step or starts a round
		return
	}
	if a.resumeStep(c) {
		return
	}
	c.Send(c.Self(), &startRound{})
}

func (a *agent) initConversation() error {
	if cp := a.spec.resume; cp != nil {
		a.conv = cp.Conversation
		a.round, a.usage, a.cost, a.model = cp.Round, cp.Usage, cp.Cost, cp.Model
		if cp.Phase != "" {
			a.phase = cp.Phase
		}
		var st checkpointState
		if len(cp.State) > 0 {
			if err := json.Unmarshal(cp.State, &st); err != nil {
				return fmt.Errorf("resume %s: checkpoint state: %w", a.spec.id, err)
			}
		}
		a.planRounds, a.bestText = st.PlanRounds, st.BestText
		a.load(st.LoadedTools)
		a.ev.setSeq(st.Seq)
		a.session.Reads.Restore(st.Reads)
		return nil
	}
	conv, err := convo.New(a.rt.convoConfig(a.rt.pickModel(a.spec, 1), a.spec.kind.Tools))
	if err != nil {
		return fmt.Errorf("conversation: %w", err)
	}
	if err := conv.AppendSystem(a.systemPrompt()); err != nil {
		return err
	}
	if a.spec.context != "" {
		if err := conv.AppendSystem("Context from parent task:\n" + a.spec.context); err != nil {
			return err
		}
	}
	if err := conv.AppendTask(a.spec.task); err != nil {
		return err
	}
	a.conv = conv
	return nil
}

// toolNames is the kind's tool set in the current phase.
func (a *agent) toolNames() []string {
	if a.phase == PhasePlan {
		return planningTools(a.spec.kind, a.rt.readOnlyTool)
	}
	return a.spec.kind.Tools
}

func (a *agent) systemPrompt() string {
	k := a.spec.kind
	prompt := k.Prompt
	if prompt == "" {
		prompt = fmt.Sprintf("You are a %s agent. %s", k.Name, k.Description)
	}
	return prompt + "\n\n" + tools.Guidance(a.rt.registryFor(k.Tools))
}

func (a *agent) status() *StatusReply {
	return &StatusReply{Agent: a.spec.id, Kind: a.spec.kind.Name, Round: a.round, Phase: a.phase,
		PromptTokens: a.usage.PromptTokens, CompletionTokens: a.usage.CompletionTokens,
		Cost: a.cost, CurrentTool: a.currentTool.get(), Model: a.model, Ended: a.ended}
}

func (a *agent) onCancel(c actor.Context, m *Cancel) {
	a.log.Debug().Str("reason", m.Reason).Msg("cancel")
	a.cancel()
	a.kids.cancelAll(c)
	if !a.busy {
		a.finish(c, AgentResult{Status: StatusCancelled, Reason: ReasonCancelled, Text: a.bestText})
	}
	// Otherwise the running step ends on the cancelled context and its
	// completion message finishes the agent.
}
