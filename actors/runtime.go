package actors

import (
	"context"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors/convo"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/changes"
	"github.com/troupe-ai/troupe/internal/redact"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/telemetry"
	"github.com/troupe-ai/troupe/tools"
	agenttools "github.com/troupe-ai/troupe/tools/agent"
	"github.com/troupe-ai/troupe/tools/builtin"
	"github.com/troupe-ai/troupe/tools/procguard"
	"github.com/troupe-ai/troupe/tools/web"
)

// Models says which model each agent runs on.
type Models struct {
	// Default is the model of the root and of kinds with role "default".
	Default string
	// Cheap is the model of kinds with role "cheap" (explore); "" = Default.
	Cheap string
	// Router, if set, holds the routing strategy (per-kind rules,
	// cheap-orchestrator, round ranges); nil routes by the kinds' roles
	// alone. Its Choose is the one place a model is decided.
	Router *llm.Router
	// Cost prices a usage on a model (for spawn.plan estimates); optional.
	Cost func(model string, u llm.Usage) float64
	// Window gives a model's context window in tokens; nil or 0 → 128000.
	Window func(model string) int
}

// runtime is what every agent of a run shares. It is built once by Run and
// read concurrently; the cache, the budget client and the emitters are
// safe for concurrent use.
type runtime struct {
	ctx       context.Context
	run       string
	node      string
	system    *actor.ActorSystem
	client    llm.Client
	models    Models
	router    *llm.Router
	kinds     map[string]Kind
	known     *tools.Registry
	ws        *tools.Workspace
	toolCfg   builtin.Config
	cache     *tools.Cache
	web       *web.Cache // pages web_fetch read, shared by the run's agents
	spill     *tools.Spiller
	settings  Settings
	events    Emitter        // seqs, in front of the run's emitters
	subs      *subAgentTally // how the run's sub-agents ended
	seqs      *seqTracker
	budget    budget.Service
	approver  Approver
	placer    Placer
	tracer    telemetry.Tracer // off unless tracing is configured
	deltas    bool             // emit llm.delta events
	artifacts tools.ArtifactStore
	sources   []tools.ToolSource // MCP servers and the like; their creator closes them
	// toolCallLimit: the run limits tool calls, so they are charged at once.
	toolCallLimit bool
	dataDir       string           // the workspace's folder of agent-visible files
	stateDir      string           // what troupe trusts: checkpoints, kept patches
	iso           *changes.Run     // worktrees for agents that may change files
	redact        *redact.Redactor // configured secrets, masked in all the run writes
	// procs keeps the processes of the run's shell commands, sessions and
	// jobs from outliving their agent or this process; closed when the
	// run's actor system shuts down.
	procs *procguard.Guard
	// written counts the bytes the run's agents wrote to their checkpoints
	// and journals (shared by the runs of a Host).
	written *atomic.Int64
	log     zerolog.Logger
}

// newSession is the session of one agent of the given kind. The sandbox
// of the kind (builtin.Config.Sandbox) is handed to the shell tools there.
func (rt *runtime) newSession(agent, kind string) *tools.Session {
	return rt.newSessionIn(agent, kind, rt.ws)
}

// newSessionIn is newSession with the agent's tools working in ws.
func (rt *runtime) newSessionIn(agent, kind string, ws *tools.Workspace) *tools.Session {
	s := &tools.Session{Agent: agent, Workspace: ws, Reads: tools.NewReadTracker(),
		Todos: &tools.TodoList{}, Cache: rt.cache, Spill: rt.spill, Config: rt.toolCfg.Config, Artifacts: rt.artifacts,
		Redact: rt.redact.String}
	sh := builtin.Shared{Web: rt.web, Procs: rt.procs}
	if sb := rt.toolCfg.Sandbox; sb != nil {
		sh.Sandbox = sb.BoxIn(kind, ws.CommandRoot(), ws.Root())
	}
	builtin.Prepare(s, rt.toolCfg, sh)
	return s
}

func (rt *runtime) registryFor(names []string) *tools.Registry { return rt.known.Filter(names) }

func (rt *runtime) readOnlyTool(name string) bool {
	t, ok := rt.known.Get(name)
	return ok && t.Spec().ReadOnly
}

// pickModel is the agent's model in round: llm.Router.Choose decides,
// from the delegate call's model, the kind's own model, the strategy and
// the kind's role.
func (rt *runtime) pickModel(spec agentSpec, round int) string {
	return rt.router.Choose(llm.Choice{Kind: spec.kind.Name, Round: round, Override: spec.model,
		KindModel: spec.kind.Model, Role: spec.kind.ModelRole, ParentModel: spec.parentModel})
}

func (rt *runtime) window(model string) int {
	if rt.models.Window != nil {
		if w := rt.models.Window(model); w > 0 {
			return w
		}
	}
	return 128_000
}

// convoConfig sizes a conversation for model; the tool schemas sent with
// every request count in its estimate.
func (rt *runtime) convoConfig(model string, toolNames []string) convo.Config {
	protected := rt.settings.ProtectedTools
	if protected == nil {
		protected = []string{tools.NameTodo, agenttools.NameSubmitPlan}
	}
	fixed := 0
	for _, ts := range rt.registryFor(toolNames).ToolSpecs() {
		fixed += len(ts.Name) + len(ts.Description) + len(ts.Parameters)
	}
	return convo.Config{Window: rt.window(model), Protected: protected, RecentMessages: rt.settings.RecentMessages,
		FixedChars: fixed}
}

// store is where agent keeps its checkpoint and tool journal; what it
// writes is redacted.
func (rt *runtime) store(agent string) (convo.Store, error) {
	dir, err := convo.CheckpointDir(rt.stateDir, rt.run, agent)
	if err != nil {
		return convo.Store{}, err
	}
	return convo.Store{Dir: dir, Filter: rt.redact.JSON}, nil
}

// shutdown stops the run's actor system, kills what its tools may still
// have running and closes the workspace root.
func (rt *runtime) shutdown() {
	rt.system.Shutdown()
	if err := rt.procs.Close(); err != nil {
		rt.log.Warn().Err(err).Msg("close the process guard")
	}
	_ = rt.ws.Close()
}
