package actors

import (
	"context"
	"path/filepath"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/internal/convo"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/tools"
)

// Models says which model each agent runs on.
type Models struct {
	// Default is the model of the root and of kinds with role "default".
	Default string
	// Cheap is the model of kinds with role "cheap" (explore); "" = Default.
	Cheap string
	// Route, if set, picks the model for a kind and round (round-based
	// overrides, cheap-orchestrator, per-kind models); it overrides the
	// roles but not a kind's own Model nor an explicit delegate model.
	Route func(kind string, round int) string
	// Cost prices a usage on a model (for spawn.plan estimates); optional.
	Cost func(model string, u llm.Usage) float64
	// Window gives a model's context window in tokens; nil or 0 → 128000.
	Window func(model string) int
}

// runtime is what every agent of a run shares. It is built once by Run and
// read concurrently; the cache, the budget client and the emitters are
// safe for concurrent use.
type runtime struct {
	ctx      context.Context
	run      string
	node     string
	system   *actor.ActorSystem
	client   llm.Client
	models   Models
	kinds    map[string]Kind
	known    *tools.Registry
	ws       *tools.Workspace
	toolCfg  tools.Config
	cache    *tools.Cache
	spill    *tools.Spiller
	settings Settings
	events   Emitter
	budget   budget.Service
	approver Approver
	placer   Placer
	deltas   bool // emit llm.delta events
	// toolCallLimit: the run limits tool calls, so they are charged at once.
	toolCallLimit bool
	dataDir       string
	log           zerolog.Logger
}

func (rt *runtime) newSession(agent string) *tools.Session {
	return &tools.Session{Agent: agent, Workspace: rt.ws, Reads: tools.NewReadTracker(),
		Todos: &tools.TodoList{}, Cache: rt.cache, Spill: rt.spill, Config: rt.toolCfg}
}

func (rt *runtime) registryFor(names []string) *tools.Registry { return rt.known.Filter(names) }

func (rt *runtime) readOnlyTool(name string) bool {
	t, ok := rt.known.Get(name)
	return ok && t.Spec().ReadOnly
}

// pickModel routes: an explicit delegate model, then the kind's own model,
// then the router, then the kind's role.
func (rt *runtime) pickModel(spec agentSpec, round int) string {
	switch {
	case spec.model != "":
		return spec.model
	case spec.kind.Model != "":
		return spec.kind.Model
	case rt.models.Route != nil:
		if m := rt.models.Route(spec.kind.Name, round); m != "" {
			return m
		}
	}
	switch spec.kind.ModelRole {
	case "cheap":
		if rt.models.Cheap != "" {
			return rt.models.Cheap
		}
	case "parent":
		if spec.parentModel != "" {
			return spec.parentModel
		}
	}
	return rt.models.Default
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
		protected = []string{tools.NameTodo, tools.NameSubmitPlan}
	}
	fixed := 0
	for _, ts := range rt.registryFor(toolNames).ToolSpecs() {
		fixed += len(ts.Name) + len(ts.Description) + len(ts.Parameters)
	}
	return convo.Config{Window: rt.window(model), Protected: protected, RecentMessages: rt.settings.RecentMessages,
		FixedChars: fixed}
}

func (rt *runtime) saveCheckpoint(ck *convo.Checkpoint) (string, error) {
	dir, err := convo.CheckpointDir(rt.dataDir, rt.run, ck.Agent)
	if err != nil {
		return "", err
	}
	if err := convo.SaveCheckpoint(dir, ck); err != nil {
		return "", err
	}
	return filepath.Join(dir, convo.CheckpointFile), nil
}
