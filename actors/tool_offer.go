package actors

import (
	"maps"
	"runtime/debug"
	"slices"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
)

// sourcesLoaded brings an agent the tools of the run's tool sources (MCP
// servers) that serve its kind.
type sourcesLoaded struct{ tools []tools.Tool }

// phaseTools is what an agent is offered in one phase, rebuilt when the
// phase changes or the agent loads deferred tools (tools.Tiers.Offer).
type phaseTools struct {
	phase  string
	loaded int // len(agent.loaded) when built
	reg    *tools.Registry
	specs  []messages.ToolSpec
	offer  tools.Offer
	// chars and tokens are the offer's definitions' size, counted once
	// (each round reports them).
	chars, tokens int
}

// sources are the run's tool sources that serve the agent's kind.
func (a *agent) sources() []tools.ToolSource {
	var out []tools.ToolSource
	for _, s := range a.rt.sources {
		if s.For(a.spec.kind.Name) {
			out = append(out, s)
		}
	}
	return out
}

// loadSources runs off the mailbox before the agent's first round: it
// lists the tools of srcs, starting the ones not running yet. A source
// that fails leaves its tools out (logged); the agent runs without them.
func (a *agent) loadSources(srcs []tools.ToolSource) {
	root := a.rt.system.Root
	defer func() {
		if v := recover(); v != nil {
			a.log.Error().Interface("panic", v).Bytes("stack", debug.Stack()).Msg("tool sources panicked")
			root.Send(a.self, &stepPanic{where: "loading tool sources", value: v})
		}
	}()
	var out []tools.Tool
	for _, src := range srcs {
		ts, err := src.Tools(a.ctx)
		if err != nil {
			if a.ctx.Err() == nil {
				a.log.Warn().Err(err).Str("source", src.Name()).Msg("tool source unavailable; its tools are left out")
			}
			continue
		}
		out = append(out, ts...)
	}
	root.Send(a.self, &sourcesLoaded{tools: out})
}

func (a *agent) onSourcesLoaded(c actor.Context, m *sourcesLoaded) {
	a.busy = false
	a.sourced = m.tools
	if a.resumeStep(c) {
		return
	}
	c.Send(c.Self(), &startRound{})
}

// allowed is the registry of every tool the agent may call in its phase:
// its kind's tools and its sources' (only the read-only ones while it
// plans).
func (a *agent) allowed() *tools.Registry {
	reg := a.rt.registryFor(a.toolNames())
	if len(a.sourced) == 0 {
		return reg
	}
	all := make([]tools.Tool, 0, len(a.sourced)+len(reg.Names()))
	for _, n := range reg.Names() {
		t, _ := reg.Get(n)
		all = append(all, t)
	}
	for _, t := range a.sourced {
		if _, dup := reg.Get(t.Spec().Name); dup || (a.phase == PhasePlan && !t.Spec().ReadOnly) {
			continue
		}
		all = append(all, t)
	}
	out, err := tools.BuildRegistry(all...)
	if err != nil {
		a.log.Error().Err(err).Msg("tool sources offer a name twice; their tools are left out")
		return reg
	}
	return out
}

// toolSet returns the agent's offer for this round, rebuilt only when the
// phase changed or it loaded tools since.
func (a *agent) toolSet() *phaseTools {
	if a.curTools != nil && a.curTools.phase == a.phase && a.curTools.loaded == len(a.loaded) {
		return a.curTools
	}
	offer := a.rt.toolCfg.Tiers.Offer(a.allowed(), a.loaded)
	return &phaseTools{phase: a.phase, loaded: len(a.loaded), reg: offer.Callable, specs: offer.Specs, offer: offer,
		chars: offer.Chars(), tokens: offer.Tokens()}
}

// fitToolDefinitions makes the context estimate count this round's tool
// definitions.
func (a *agent) fitToolDefinitions(pt *phaseTools) {
	cfg := a.conv.Config()
	if chars := pt.chars; cfg.FixedChars != chars {
		cfg.FixedChars = chars
		if err := a.conv.SetConfig(cfg); err != nil {
			a.log.Error().Err(err).Msg("count tool definitions")
		}
	}
}

// loadedBy lists the deferred tools a tool step loads: those search_tools
// found, and those the model called without loading them first (the call
// runs, and the tool's definition is sent from the next round on).
func loadedBy(pt *phaseTools, calls []messages.ToolCall, results []tools.Result) []string {
	var out []string
	for i, c := range calls {
		if pt.offer.IsDeferred(c.Name) {
			out = append(out, c.Name)
		}
		if c.Name == tools.NameSearchTools {
			names, _ := results[i].Metadata[tools.MetaLoadedTools].([]string)
			out = append(out, names...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// load adds names to the agent's loaded tools.
func (a *agent) load(names []string) {
	if len(names) == 0 {
		return
	}
	if a.loaded == nil {
		a.loaded = map[string]bool{}
	}
	for _, n := range names {
		a.loaded[n] = true
	}
}

// loadedNames are the agent's loaded tools, sorted, for its checkpoint.
func loadedNames(loaded map[string]bool, more []string) []string {
	out := slices.Collect(maps.Keys(loaded))
	out = append(out, more...)
	slices.Sort(out)
	return slices.Compact(out)
}
