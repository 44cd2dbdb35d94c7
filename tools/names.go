package tools

import "slices"

// Tool names: the one place each is spelled.
const (
	NameApplyPatch  = "apply_patch"
	NameAskUser     = "ask_user"
	NameCancelAgent = "cancel_agent"
	NameCheckAgent  = "check_agent"
	NameDelegate    = "delegate"
	NameEditFile    = "edit_file"
	NameFindFiles   = "find_files"
	NameGrep        = "grep"
	NameJobKill     = "job_kill"
	NameJobOutput   = "job_output"
	NameListDir     = "list_dir"
	NameReadFile    = "read_file"
	NameSearchTools = "search_tools"
	NameSendInput   = "send_input"
	NameShell       = "shell"
	NameSubmitPlan  = "submit_plan"
	NameThink       = "think"
	NameTodo        = "todo"
	NameWebFetch    = "web_fetch"
	NameWebSearch   = "web_search"
	NameWriteFile   = "write_file"
)

// The built-in agent kinds a tool declares itself for (Spec.Kinds). The
// kinds themselves (prompts, models, delegation) are the actors package's.
const (
	KindRoot    = "root"
	KindExplore = "explore"
	KindPlanner = "planner"
	KindWorker  = "worker"
)

// Kind sets of Spec.Kinds, by what a tool does.
var (
	readKinds       = []string{KindRoot, KindExplore, KindPlanner, KindWorker} // look, never change
	changeKinds     = []string{KindRoot, KindWorker}                           // change files or run commands
	delegationKinds = []string{KindRoot}                                       // start and steer agents
	planKinds       = []string{KindRoot, KindPlanner}                          // end a planning phase
)

// ForKind lists the built-in tools (submit_plan and the delegation tools
// included) that declare kind in their Spec.Kinds, sorted by name: a
// built-in kind's tool set.
func ForKind(kind string) []string {
	var out []string
	for _, t := range All() {
		if slices.Contains(t.Spec().Kinds, kind) {
			out = append(out, t.Spec().Name)
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
