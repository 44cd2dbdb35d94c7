package actors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors/convo"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/changes"
	"github.com/troupe-ai/troupe/internal/redact"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/telemetry"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/builtin"
	"github.com/troupe-ai/troupe/tools/procguard"
	"github.com/troupe-ai/troupe/tools/web"
)

// RootAgentID is the ID of every run's root agent.
const RootAgentID = "root"

// Options configure one run of a team.
type Options struct {
	Run       string // default: a new UUID
	Node      string // this process's node name, for events
	Workspace string
	Task      string
	Client    llm.Client
	Models    Models
	// Kinds are the agent kinds; nil → BuiltinKinds.
	Kinds    map[string]Kind
	Settings Settings
	Tools    builtin.Config
	// Budget limits the run; Tokens 0 → 10 million.
	Budget   budget.Limits
	Events   Emitter
	Approver Approver
	Log      zerolog.Logger
	// Resume continues the root agent from this checkpoint (same run ID);
	// see FindCheckpoint.
	Resume *Checkpoint
	// DataDir is the workspace's folder of agent-visible files (worktrees,
	// spilled outputs); default <workspace>/.troupe.
	DataDir string
	// StateDir holds what troupe trusts of the run, out of the agents'
	// reach: checkpoints and journals, kept patches, the index of spilled
	// outputs. Default: the workspace's state directory (StateDir), made
	// 0700. It may not lie inside the workspace, which agents write.
	StateDir string
	// ExtraTools are added to the built-in tools (custom tools, tests).
	ExtraTools []tools.Tool
	// ToolSources supply tools listed at run time (MCP servers, package
	// tools/mcp): an agent whose kind a source serves gets its tools,
	// subject to the tiers in Tools.Tiers. The caller owns the sources
	// and closes them when the run ends.
	ToolSources []tools.ToolSource
	// RunLease is the run's lease as its orchestrator heartbeats it (0:
	// none); run.started says it, so a watcher knows to show the run lost
	// once it lapses.
	RunLease time.Duration
	// Placer decides where each child agent runs; nil runs every child in
	// this process (LocalPlacer).
	Placer Placer
	// OnBudget, if set, is called with the run's budget once it exists and
	// before the root agent starts, so it can be served to agents that run
	// elsewhere (cluster.Remote.ServeBudget). An error stops the start.
	OnBudget func(budget.Service) error
	// Artifacts, if set, also keeps the run's spilled outputs where agents
	// on other processes read them (artifact:// handles).
	Artifacts tools.ArtifactStore
	// StreamDeltas emits the model's streamed text as llm.delta events
	// (coalesced, at most about ten a second per agent).
	StreamDeltas bool
	// EventsDropped, if set, reports how many events the run's emitters
	// had to drop (a NATS outage); run.finished carries it.
	EventsDropped func() uint64
	// Tracer, when on (telemetry.Provider.Tracer), makes every agent an
	// invoke_agent span, under its parent's delegate call's span, and its
	// model and tool calls chat and execute_tool spans under it. The zero
	// Tracer is off.
	Tracer telemetry.Tracer
	// Secrets are values never to show (the model API key, NATS
	// credentials: llm.Config.Secrets, bus.ConnectOptions.Secrets). Each,
	// if 8 characters or longer, is replaced by "[redacted]" in tool
	// results (before the model, the cache or a spill file sees them),
	// events and checkpoints. Logs are the caller's writer: wrap it.
	Secrets []string
}

// Result is a run's outcome: the root agent's result and the run's totals.
type Result struct {
	Run string `json:"run"`
	AgentResult
	Wall       time.Duration            `json:"wall_ns"`
	Budget     *messages.BudgetSnapshot `json:"budget,omitempty"`
	Checkpoint string                   `json:"checkpoint_dir,omitempty"`
	// EventsDropped counts the events that could not be published (see
	// Options.EventsDropped), up to run.finished.
	EventsDropped uint64 `json:"events_dropped,omitempty"`
	// SubAgents counts how the sub-agents ended (the root is not one).
	SubAgents SubAgents `json:"sub_agents"`
	// Changes are what became of the changes of the agents that worked in
	// worktrees of their own, in the order they were brought back.
	Changes []messages.ChangeOutcome `json:"changes,omitempty"`
	// LastSeq is the seq of the last event of each agent of this process,
	// as run.finished carries it (run.finished's own for "run"): with it,
	// a subscriber counts the events it lacks.
	LastSeq map[string]uint64 `json:"last_seq,omitempty"`
}

// Team is a running team: its root agent and the run's budget actor.
type Team struct {
	rt      *runtime
	o       Options
	start   time.Time
	runEv   *agentEvents
	bpid    *actor.PID
	root    *actor.PID
	results chan AgentResult
}

// Run runs a team on a task until the root agent ends, and returns its
// result. Cancelling ctx cancels the whole tree (each agent ends with its
// best text so far) and returns once every agent has stopped and every
// lease is released; the last checkpoint stays for `orchestrator resume`.
func Run(ctx context.Context, o Options) (Result, error) {
	t, err := Start(ctx, o)
	if err != nil {
		return Result{}, err
	}
	return t.Wait(ctx)
}

// Start starts a team and returns at once; Wait collects the result.
func Start(ctx context.Context, o Options) (*Team, error) {
	if o.Task == "" && o.Resume == nil {
		return nil, errors.New("run: empty task")
	}
	if o.Kinds != nil {
		if _, ok := o.Kinds[KindRoot]; !ok {
			return nil, errors.New("run: no root kind")
		}
	}
	rt, err := newRuntime(ctx, &o, false)
	if err != nil {
		return nil, err
	}
	t := &Team{rt: rt, o: o, start: time.Now(), results: make(chan AgentResult, 1),
		runEv: newAgentEvents(rt.events, rt.run, "run", "", "run", rt.node, rt.log)}
	t.runEv.emit(messages.EvtRunStarted, messages.RunStarted{Task: o.Task, Workspace: rt.ws.Root(),
		Model: o.Models.Default, Resumed: o.Resume != nil, LeaseMS: o.RunLease.Milliseconds()})
	go func() { // old spill files go; the run does not wait for it
		if n, err := rt.spill.Sweep(time.Now()); err != nil || n > 0 {
			rt.log.Debug().Err(err).Int("removed", n).Msg("spill sweep")
		}
	}()
	t.bpid, err = budget.Spawn(rt.system.Root, rt.run, o.Budget, budget.WithLogger(rt.log))
	if err != nil {
		rt.shutdown()
		return nil, fmt.Errorf("start budget actor: %w", err)
	}
	rt.budget = budget.NewClient(rt.system.Root, t.bpid)
	if o.OnBudget != nil {
		if err := o.OnBudget(rt.budget); err != nil {
			t.shutdown()
			return nil, fmt.Errorf("serve the run's budget: %w", err)
		}
	}
	// The root reserves the whole run: its children draw from its lease.
	lease, err := rt.budget.Acquire(ctx, budget.Acquire{Agent: RootAgentID, Kind: KindRoot, Estimate: o.Budget.Tokens}, nil)
	if err != nil {
		t.shutdown()
		return nil, fmt.Errorf("acquire root budget: %w", err)
	}
	t.runEv.emit(messages.EvtBudgetAcquired, lease.Wire())
	spec := agentSpec{id: RootAgentID, kind: rt.kinds[KindRoot], task: o.Task, resume: o.Resume.checkpoint(),
		done: func(r AgentResult) { t.results <- r }}
	if o.Resume != nil {
		// The resumed root stays on its checkpoint's model (or the one the
		// caller put in Checkpoint.Model), not the configured default.
		spec.task, spec.model = o.Resume.cp.Task, o.Resume.Model
	}
	spec.lease = lease.Tokens
	t.root = rt.system.Root.SpawnPrefix(actor.PropsFromProducer(func() actor.Actor { return newAgent(rt, spec) },
		actor.WithSupervisor(childStrategy())), "agent-root")
	return t, nil
}

// Run is the team's run ID.
func (t *Team) Run() string { return t.rt.run }

// Budget is the run's budget, for serving it to agents that run
// elsewhere (see StartAgent).
func (t *Team) Budget() *budget.Client { return t.rt.budget.(*budget.Client) }

// Cancel cancels the whole tree; Wait returns once it has stopped. A
// Placer that is a RunCanceller is told first, so agents on other
// machines hear of it at once, not only as their parents wind down.
func (t *Team) Cancel() {
	if rc, ok := t.rt.placer.(RunCanceller); ok {
		rc.CancelRun("run cancelled")
	}
	t.rt.system.Root.Send(t.root, &Cancel{Reason: "run cancelled"})
}

// Wait waits for the root agent to end (cancelling the tree if ctx ends
// first), settles the budget and returns the run's result. Call it once.
func (t *Team) Wait(ctx context.Context) (Result, error) {
	var res AgentResult
	select {
	case res = <-t.results:
	case <-ctx.Done():
		t.Cancel()
		res = <-t.results
	}
	_ = t.rt.system.Root.StopFuture(t.root).Wait()
	rt := t.rt
	out := Result{Run: rt.run, AgentResult: res, Wall: time.Since(t.start), SubAgents: rt.subs.get()}
	// Every lease of the tree is back: an agent releases its lease before
	// its result is delivered, and only after its children have ended.
	if snap, err := rt.budget.Snapshot(context.Background()); err == nil {
		out.Budget = &snap
	}
	if dir, err := convo.RunDir(rt.stateDir, rt.run); err == nil {
		out.Checkpoint = dir
	}
	if res.Status == StatusCompleted && res.Reason == ReasonFinished && !t.o.Settings.KeepCheckpoints {
		if err := convo.RemoveRun(rt.stateDir, rt.run); err != nil {
			rt.log.Warn().Err(err).Msg("remove checkpoints")
		}
		out.Checkpoint = ""
	}
	if re, ok := rt.placer.(RunEnder); ok {
		re.EndRun() // its events of the run come before the settling below
	}
	out.EventsDropped = t.eventsDropped()
	last := rt.seqs.last()
	last[t.runEv.base.Agent] = t.runEv.current() + 1 // run.finished's own
	out.LastSeq = last
	fin := messages.RunFinished{Status: res.Status, Reason: res.Reason, Rounds: res.Rounds,
		WallMS: out.Wall.Milliseconds(), EventsDropped: out.EventsDropped, Budget: out.Budget, LastSeq: last}
	if b := out.Budget; b != nil {
		fin.Tokens, fin.CostUSD, fin.ToolCalls, fin.Agents = b.Used.Tokens, b.Used.CostUSD, b.Used.ToolCalls, len(b.Agents)
	}
	t.runEv.emit(messages.EvtRunFinished, fin)
	out.Changes = t.shutdown()
	return out, nil
}

func (t *Team) eventsDropped() uint64 {
	if t.o.EventsDropped == nil {
		return 0
	}
	return t.o.EventsDropped()
}

// shutdown stops the run and returns the outcomes of its changesets
// (the workspace lifecycle's end: changes.Run.Finish).
func (t *Team) shutdown() []messages.ChangeOutcome {
	if t.bpid != nil {
		_ = budget.Stop(t.rt.system.Root, t.bpid)
	}
	t.rt.shutdown()
	return t.rt.iso.Finish()
}

func newRuntime(ctx context.Context, o *Options, host bool) (*runtime, error) {
	if o.Client == nil {
		return nil, errors.New("run: no model client")
	}
	if o.Run == "" {
		o.Run = uuid.NewString()
	}
	if o.Resume != nil {
		if o.Resume.cp == nil {
			return nil, errors.New("run: Resume is not a checkpoint from FindCheckpoint")
		}
		o.Run = o.Resume.cp.Run
	}
	if o.Budget.Tokens == 0 {
		o.Budget.Tokens = 10_000_000
	}
	ws, err := tools.NewWorkspace(o.Workspace)
	if err != nil {
		return nil, err
	}
	if err := o.prepareDirs(ws.Root()); err != nil {
		_ = ws.Close()
		return nil, err
	}
	kinds := o.Kinds
	if kinds == nil {
		kinds = BuiltinKinds()
	}
	kinds = kindsUnder(kinds, o.Tools)
	known, err := tools.BuildRegistry(append(offeredTools(builtin.All(), o.Tools), o.ExtraTools...)...)
	if err != nil {
		return nil, fmt.Errorf("run: Options.ExtraTools: %w", err)
	}
	for _, k := range kinds {
		if err := validateKind(k, known.Get); err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
	}
	router := o.Models.Router
	if router == nil {
		if o.Models.Default == "" {
			return nil, errors.New("run: Models.Default is empty")
		}
		r, err := llm.NewRouter(llm.RouteConfig{Strategy: llm.RoutePerKind, Default: o.Models.Default, Cheap: o.Models.Cheap})
		if err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
		router = r
	}
	placer := o.Placer
	if placer == nil {
		placer = LocalPlacer{}
	}
	events := o.Events
	if events == nil {
		events = Emitters{}
	}
	secrets := redact.New(o.Secrets...)
	if !secrets.Empty() {
		events = redactingEmitter{out: events, r: secrets}
	}
	seqs := &seqTracker{out: events}
	// A host (a node) makes no worktrees ahead: its agents work in their
	// tasks' snapshots, and its own checkout is to hold no worktree.
	iso, err := changes.Open(ctx, o.Settings, changes.Dirs{Root: ws.Root(), Data: o.DataDir, State: o.StateDir}, mayChangeFiles(kinds) && !host && o.Node == "", o.Log)
	if err != nil {
		_ = ws.Close()
		return nil, err
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		if o.Log.GetLevel() == zerolog.Disabled {
			return slog.New(slog.NewTextHandler(io.Discard, nil))
		}
		return slog.New(zerolog.NewSlogHandler(o.Log.Level(zerolog.WarnLevel)))
	}))
	return &runtime{written: new(atomic.Int64), subs: &subAgentTally{}, ctx: context.WithoutCancel(ctx), run: o.Run, node: o.Node, system: sys, client: o.Client,
		models: o.Models, kinds: kinds, known: known, ws: ws, toolCfg: o.Tools,
		cache: tools.NewCache(o.Tools.CacheMaxAge), web: web.NewCache(o.Tools.Web.CacheTTL), spill: tools.NewSpiller(ws, o.DataDir, o.StateDir, o.Tools.SpillMaxAge),
		settings: o.Settings, iso: iso, events: seqs, seqs: seqs, approver: o.Approver, placer: placer, tracer: o.Tracer, router: router, artifacts: o.Artifacts, deltas: o.StreamDeltas, dataDir: o.DataDir, stateDir: o.StateDir, log: o.Log,
		redact:        secrets,
		sources:       o.ToolSources,
		toolCallLimit: o.Budget.ToolCalls > 0, procs: procguard.New()}, nil
}

// childStrategy stops a failed agent, never restarts it: a restart would
// drop the failing message and reset the conversation.
func childStrategy() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(0, time.Second, func(any) actor.Directive { return actor.StopDirective })
}
