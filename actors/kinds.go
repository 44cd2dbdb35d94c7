package actors

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/troupe-ai/troupe/configs"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/tools"
	agenttools "github.com/troupe-ai/troupe/tools/agent"
	"github.com/troupe-ai/troupe/tools/builtin"
)

// Kind is a type of agent (configs.Kind): its tools, model, delegation
// rights and prompt. The restriction is enforced by the actor.
type Kind = configs.Kind

// The built-in kind names.
const (
	KindRoot     = builtin.KindRoot
	KindExplore  = builtin.KindExplore
	KindPlanner  = builtin.KindPlanner
	KindWorker   = builtin.KindWorker
	PhasePlan    = "planning"
	PhaseExecute = "executing"
)

// DelegationTools are the tools of agents that may delegate (built on
// first use: building tools is no work for a program's start-up).
var DelegationTools = sync.OnceValue(builtin.DelegationToolNames)

// BuiltinKinds returns the four built-in kinds. Their tool sets come from
// the tools' own declarations (tools.Spec.Kinds).
func BuiltinKinds() map[string]Kind {
	return map[string]Kind{
		KindRoot: {Name: KindRoot, Description: "the run's top agent: plans, delegates and acts",
			Tools: builtin.ForKind(KindRoot), ModelRole: llm.RoleDefault, MayDelegate: true, PlanFirst: true, Prompt: rootPrompt},
		KindExplore: {Name: KindExplore, Description: "cheap read-only agent that answers one question about the code with path:line findings",
			Tools: builtin.ForKind(KindExplore), ModelRole: llm.RoleCheap, ReadOnly: true, Prompt: explorePrompt},
		KindPlanner: {Name: KindPlanner, Description: "read-only agent that studies the code and returns a structured plan",
			Tools: builtin.ForKind(KindPlanner), ModelRole: llm.RoleParent, ReadOnly: true, Prompt: plannerPrompt},
		KindWorker: {Name: KindWorker, Description: "agent that makes changes: edits files and runs commands",
			Tools: builtin.ForKind(KindWorker), ModelRole: llm.RoleParent, PlanFirst: true, Prompt: workerPrompt},
	}
}

// planningTools is a kind's tool set in its planning phase: its read-only
// tools plus submit_plan (and delegation of read-only kinds, which the
// delegate tool itself enforces).
func planningTools(k Kind, readOnly func(string) bool) []string {
	var out []string
	for _, t := range k.Tools {
		if readOnly(t) || slices.Contains(DelegationTools(), t) {
			out = append(out, t)
		}
	}
	if !slices.Contains(out, agenttools.NameSubmitPlan) {
		out = append(out, agenttools.NameSubmitPlan)
	}
	slices.Sort(out)
	return out
}

// validateKind reports the first problem with a kind definition.
func validateKind(k Kind, lookup func(tool string) (tools.Tool, bool)) error {
	if k.Name == "" || strings.ContainsAny(k.Name, " .*>/") {
		return fmt.Errorf("kind %q: name must be a single word", k.Name)
	}
	if len(k.Tools) == 0 {
		return fmt.Errorf("kind %s: no tools", k.Name)
	}
	for _, t := range k.Tools {
		tool, ok := lookup(t)
		if !ok && !slices.Contains(DelegationTools(), t) {
			return fmt.Errorf("kind %s: unknown tool %q", k.Name, t)
		}
		if ok && k.ReadOnly && tool.Spec().Mutates() {
			return fmt.Errorf("kind %s: read_only, but its tool %s changes files or runs commands; drop the tool or read_only", k.Name, t)
		}
	}
	if !llm.ValidRole(k.ModelRole) {
		return fmt.Errorf("kind %s: model_role must be %s, %s or %s, got %q", k.Name, llm.RoleCheap, llm.RoleParent, llm.RoleDefault, k.ModelRole)
	}
	return nil
}

const rootPrompt = `You are the lead agent of a team working in a software repository. Solve the user's task completely.
Work in two phases. First plan: investigate with the read-only tools (and, for broad questions, several explore agents in parallel), then call submit_plan. Then execute the plan: make the changes, verify them, and finish with a concise answer for the user. Your final message (a turn without tool calls) ends your work, so only write it when you are done.`

const explorePrompt = `You are an explore agent: you answer one question about a codebase, reading only. You cannot change files.
Search efficiently (grep in files mode, then read the parts that matter) and stop as soon as you can answer.
Finish with your findings: short statements, each with a path:line reference, e.g. "Retries are configured in llm/retry.go:42". No preamble.`

const plannerPrompt = `You are a planner agent: you study the code and produce a plan, reading only. You cannot change files.
When you understand enough, call submit_plan with a short summary and concrete steps; each step lists the files it touches and the agent kind suited to it (explore, worker, planner). Submitting the plan ends your work.`

const workerPrompt = `You are a worker agent: you carry out one well-defined change in a software repository.
Plan briefly, then make the change with the edit tools, verify it (build or test with shell when there is a way), and finish with a short report of what you changed (paths) and how you verified it.`
