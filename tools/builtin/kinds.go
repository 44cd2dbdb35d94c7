package builtin

import (
	"slices"

	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/agent"
	"github.com/troupe-ai/troupe/tools/shell"
	"github.com/troupe-ai/troupe/tools/web"
)

// The built-in agent kinds the tools are mapped to. The kinds themselves
// (prompts, models, delegation) are the actors package's.
const (
	KindRoot    = "root"
	KindExplore = "explore"
	KindPlanner = "planner"
	KindWorker  = "worker"
)

// Kind sets, by what a tool does.
var (
	readKinds       = []string{KindRoot, KindExplore, KindPlanner, KindWorker} // look, never change
	changeKinds     = []string{KindRoot, KindWorker}                           // change files or run commands
	delegationKinds = []string{KindRoot}                                       // start and steer agents
	planKinds       = []string{KindRoot, KindPlanner}                          // end a planning phase
)

// kindsOf maps every tool of All to the built-in kinds that get it.
var kindsOf = map[string][]string{
	tools.NameReadFile:    readKinds,
	tools.NameListDir:     readKinds,
	tools.NameFindFiles:   readKinds,
	tools.NameGrep:        readKinds,
	tools.NameThink:       readKinds,
	tools.NameEditFile:    changeKinds,
	tools.NameWriteFile:   changeKinds,
	tools.NameApplyPatch:  changeKinds,
	tools.NameTodo:        changeKinds,
	shell.NameShell:       changeKinds,
	shell.NameJobOutput:   changeKinds,
	shell.NameJobKill:     changeKinds,
	agent.NameAskUser:     changeKinds,
	web.NameWebFetch:      changeKinds,
	web.NameWebSearch:     changeKinds,
	agent.NameSubmitPlan:  planKinds,
	agent.NameDelegate:    delegationKinds,
	agent.NameCheckAgent:  delegationKinds,
	agent.NameSendInput:   delegationKinds,
	agent.NameCancelAgent: delegationKinds,
}

// KindsOf lists the built-in kinds that get the built-in tool name (nil
// for a tool that is not built in).
func KindsOf(name string) []string { return slices.Clone(kindsOf[name]) }

// ForKind lists the built-in tools (submit_plan and the delegation tools
// included) mapped to kind, sorted by name: a built-in kind's tool set.
func ForKind(kind string) []string {
	var out []string
	for name, kinds := range kindsOf { // every tool of All, by name: none is built
		if slices.Contains(kinds, kind) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// DelegationToolNames are the tools that start and steer agents; only
// agents that may delegate get them.
func DelegationToolNames() []string {
	var out []string
	for _, t := range DelegationTools() {
		out = append(out, t.Spec().Name)
	}
	slices.Sort(out)
	return out
}

// MutatingToolNames are the built-in tools whose own calls can change
// files or run commands (Spec.Mutates; delegate's depend on the kind it
// starts).
func MutatingToolNames() []string {
	var out []string
	for _, t := range All() {
		if t.Spec().Mutates() {
			out = append(out, t.Spec().Name)
		}
	}
	slices.Sort(out)
	return out
}

// Offered reports whether the built-in tool name is offered under cfg:
// web_fetch unless turned off, web_search only with a search provider.
// Every other tool is always offered.
func Offered(cfg Config, name string) bool {
	switch name {
	case web.NameWebFetch:
		return !cfg.Web.NoFetch
	case web.NameWebSearch:
		return cfg.Web.Search.Provider != ""
	}
	return true
}

// ForKindIn is a kind's tool set under cfg: tools not offered are left
// out, and explore agents get the web tools only when cfg.Web.Explore
// allows them. names is the kind's declared set (ForKind for a built-in
// kind, or a custom kind's list); the result is sorted.
func ForKindIn(cfg Config, kind string, names []string) []string {
	out := slices.DeleteFunc(slices.Clone(names), func(n string) bool {
		if !Offered(cfg, n) {
			return true
		}
		return kind == KindExplore && !cfg.Web.Explore && slices.Contains(web.ToolNames(), n)
	})
	if kind == KindExplore && cfg.Web.Explore {
		for _, n := range web.ToolNames() {
			if Offered(cfg, n) && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}
