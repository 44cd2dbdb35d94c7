package tools

import (
	"encoding/json"
	"strings"
	"time"
)

// Tier says when a tool is shown to the model.
type Tier int

const (
	// TierAlways tools are in every prompt of the kinds that allow them.
	TierAlways Tier = iota + 1
	// TierOnRelevance tools are added when the task makes them relevant.
	TierOnRelevance
	// TierOnDemand tools are offered only when asked for.
	TierOnDemand
)

func (t Tier) String() string {
	switch t {
	case TierAlways:
		return "always"
	case TierOnRelevance:
		return "on-relevance"
	case TierOnDemand:
		return "on-demand"
	}
	return "unknown"
}

// Parallel is a tool's policy for running beside other calls of one turn.
type Parallel int

const (
	// ParallelSafe calls run concurrently with anything.
	ParallelSafe Parallel = iota
	// Sequential calls run one at a time within a session (shell).
	Sequential
	// PerPath calls are serialized, in call order, with other calls that
	// touch one of the same paths.
	PerPath
)

func (p Parallel) String() string {
	switch p {
	case ParallelSafe:
		return "parallel"
	case Sequential:
		return "sequential"
	case PerPath:
		return "per-path"
	}
	return "unknown"
}

// Spec describes a tool: everything the framework needs to present it to a
// model and to run it under the right policies.
type Spec struct {
	Name        string
	Description string // the model-facing description (an embedded .md)
	// Schema is the JSON Schema of the arguments when given as is (an MCP
	// server's); tools built with New leave it nil and generate theirs on
	// first use. Read it with SchemaJSON.
	Schema json.RawMessage
	// schema generates the schema of a tool built with New.
	schema func() json.RawMessage
	// ReadOnly tools never change files, run commands or start agents
	// that may: their calls need no approval, may run while an agent
	// plans, and leave the result cache as it is.
	ReadOnly bool
	// Spawns, set on a tool whose calls start another agent (delegate),
	// reads from a call's arguments the agent kind it starts (ok false:
	// they name none). Such a call changes what that kind's tools change,
	// which only the agent actor knows, so the tool is not ReadOnly and
	// the actor judges each call by its kind: starting a read-only kind
	// needs no approval and is allowed while planning.
	Spawns     func(args json.RawMessage) (kind string, ok bool)
	Parallel   Parallel
	Cacheable  bool
	Truncation Truncation
	Tier       Tier
	// Timeout overrides the executor's per-call timeout for this tool
	// (delegate waits for a whole child agent).
	Timeout time.Duration
	// Diff marks file tools that report their changes (gateWrite) after
	// their checks and before they write: the executor puts the diff in
	// their results' metadata, and PreviewCall shows it before the call
	// runs.
	Diff bool
	// Kinds, when set, names the agent kinds a tool listed at run time
	// is meant for (an MCP server's configured kinds). The built-in tools
	// leave it empty: package tools/builtin maps them to kinds.
	Kinds []string
	// Effects marks a ReadOnly tool whose calls still act beyond
	// reading: on other agents (send_input, cancel_agent), on the user
	// (ask_user), on the agent's own plan (submit_plan) or through another
	// program (every MCP tool). A resumed run must not repeat them, so
	// they never start before their step is on disk (see Replayable).
	Effects bool
	// Polls marks a tool whose result changes over time for the same
	// arguments (job_output, check_agent): calling it again and again is
	// how it is used, so the doom-loop check leaves it alone.
	Polls bool
	// Guidance are the lines the tool adds to the tool-guidance section of
	// an agent's system prompt (see Guidance), declared with the tool.
	Guidance []GuidanceLine
}

// SchemaJSON is the JSON Schema of the tool's arguments: Schema, or the
// schema New generates (once, on the first call).
func (s Spec) SchemaJSON() json.RawMessage {
	if s.Schema == nil && s.schema != nil {
		return s.schema()
	}
	return s.Schema
}

// Mutates reports whether the tool's own calls may change files or run
// commands. A Spawns tool's calls do not: the agent they start does, with
// tools of its own, under its own executor (which keeps the run's cache
// true) and its own approvals.
func (s Spec) Mutates() bool { return !s.ReadOnly && s.Spawns == nil }

// Replayable reports whether running a call again does no harm: the tool
// only reads (files, the web, a job's output, its own notes) and acts on
// nothing. A step whose calls are all replayable may start them while its
// checkpoint is still being written: should the run be killed before the
// write lands, the resumed run asks the model again and runs them again.
func (s Spec) Replayable() bool { return s.ReadOnly && s.Spawns == nil && !s.Effects }

// GuidanceLine is one line a tool adds to the tool guidance.
type GuidanceLine struct {
	// Section is the heading it goes under ("Which tool", "Editing").
	Section string
	// Order places it within its section (lower first).
	Order int
	// Text writes the line for an agent whose tools has reports; "" leaves
	// it out (a line that would name a tool the agent lacks).
	Text func(has func(names ...string) bool) string
}

// Line is a GuidanceLine whose text does not depend on the agent's other
// tools.
func Line(section string, order int, text string) GuidanceLine {
	return GuidanceLine{Section: section, Order: order, Text: func(func(...string) bool) string { return text }}
}

// Summary is the first line of the description, for listings.
func (s Spec) Summary() string {
	d := strings.TrimSpace(s.Description)
	if i := strings.IndexByte(d, '\n'); i >= 0 {
		d = d[:i]
	}
	return strings.TrimSpace(d)
}
