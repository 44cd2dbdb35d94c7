package configs

import "time"

// Approval policies for mutating tools and fan-outs.
const (
	PolicyAuto = "auto"
	PolicyAsk  = "ask"
	PolicyDeny = "deny"
)

// Agent holds the agent-loop knobs of a run. Zero fields take defaults.
type Agent struct {
	MaxRounds      int `yaml:"max_rounds" json:"max_rounds"`           // default 50
	PlanningRounds int `yaml:"planning_rounds" json:"planning_rounds"` // default 6
	// PlanFirst overrides the kinds' plan-then-execute default, per kind.
	PlanFirst   map[string]bool `yaml:"plan_first" json:"plan_first,omitempty"`
	DoomRepeats int             `yaml:"doom_repeats" json:"doom_repeats"` // default 3
	// Approval maps a mutating tool to auto, ask or deny (default auto).
	Approval        map[string]string `yaml:"approval" json:"approval,omitempty"`
	ApprovalTimeout time.Duration     `yaml:"approval_timeout" json:"approval_timeout"` // headless deny after, default 2m
	KeepCheckpoints bool              `yaml:"keep_checkpoints" json:"keep_checkpoints"`
	// ProtectedTools' results are never evicted from the context.
	ProtectedTools []string `yaml:"protected_tools" json:"protected_tools,omitempty"`
	RecentMessages int      `yaml:"recent_messages" json:"recent_messages"`
	// TopUp is how many tokens an agent asks for when its lease runs out
	// (default: a quarter of its kind's estimate).
	TopUp int64 `yaml:"top_up" json:"top_up"`
	// Estimates are the tokens reserved per kind when it starts.
	Estimates map[string]int64 `yaml:"estimates" json:"estimates,omitempty"`

	// MaxToolCallsPerRound refuses a model answer with more tool calls
	// (default 64).
	MaxToolCallsPerRound int `yaml:"max_tool_calls_per_round" json:"max_tool_calls_per_round"`

	// RunPriority is run.priority, carried with the settings to the run's
	// agents on nodes (no key of the agent section sets it).
	RunPriority int `yaml:"-" json:"run_priority,omitempty"`

	// Delegation.
	ResultCap       int    `yaml:"result_cap" json:"result_cap"`             // default 4000 chars
	MaxDepth        int    `yaml:"max_depth" json:"max_depth"`               // default 1: only the root delegates
	FanoutThreshold int    `yaml:"fanout_threshold" json:"fanout_threshold"` // default 8
	FanoutPolicy    string `yaml:"fanout_policy" json:"fanout_policy"`       // auto|ask|deny, default auto
	OnParentFinish  string `yaml:"on_parent_finish" json:"on_parent_finish"` // cancel|wait, default cancel

	// Isolation says where an agent that may change files works: auto (its
	// own worktree when it runs remotely, in the background or alongside
	// another such agent), worktree (always its own) or shared (the
	// workspace itself). Default auto.
	Isolation string `yaml:"isolation" json:"isolation"`
	// Changes says what becomes of an isolated agent's changes: apply
	// (merged into the workspace), branch (committed on
	// troupe/<run8>/<agent>, the first 8 characters of the run ID) or patch (a patch file only). Default apply.
	Changes string `yaml:"changes" json:"changes"`
	// Worktrees says what an isolated agent's worktree is: auto (an
	// overlay of one shared checkout of the snapshot where this machine
	// allows unprivileged overlay mounts, else a checkout of its own),
	// overlay (always, or an error) or checkout. Default auto.
	Worktrees string `yaml:"worktrees" json:"worktrees"`
	// MaxChangeBytes is the largest file an isolated agent's changes
	// carry: a bigger one is left out of the changeset, named in the
	// outcome and left in the agent's kept worktree. Default 100 MiB.
	MaxChangeBytes int64 `yaml:"max_change_bytes" json:"max_change_bytes"`
}

// Isolation modes (Agent.Isolation).
const (
	IsolationAuto     = "auto"
	IsolationWorktree = "worktree"
	IsolationShared   = "shared"
)

// IsolationMode is the isolation mode, auto when unset.
func (s Agent) IsolationMode() string { return defString(s.Isolation, IsolationAuto) }

// WorktreesKind is the kind of isolated agents' worktrees, auto when unset.
func (s Agent) WorktreesKind() string { return defString(s.Worktrees, "auto") }

// ChangesMode is what becomes of an isolated agent's changes, apply when unset.
func (s Agent) ChangesMode() string { return defString(s.Changes, "apply") }

// DefaultMaxChangeBytes is agent.max_change_bytes when unset.
const DefaultMaxChangeBytes = 100 << 20

// ChangeByteLimit is the largest file an agent's changes carry.
func (s Agent) ChangeByteLimit() int64 {
	if s.MaxChangeBytes > 0 {
		return s.MaxChangeBytes
	}
	return DefaultMaxChangeBytes
}

func defString(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

// RoundLimit is the most rounds an agent runs.
func (s Agent) RoundLimit() int { return def(s.MaxRounds, 50) }

// PlanningLimit is the most rounds of a planning phase.
func (s Agent) PlanningLimit() int { return def(s.PlanningRounds, 6) }

// DoomLimit is how many identical calls in a row make a doom loop.
func (s Agent) DoomLimit() int { return def(s.DoomRepeats, 3) }

// ToolCallLimit is the most tool calls one model answer may make.
func (s Agent) ToolCallLimit() int { return def(s.MaxToolCallsPerRound, 64) }

// ResultLimit caps a foreground child's result, in characters.
func (s Agent) ResultLimit() int { return def(s.ResultCap, 4000) }

// DepthLimit is the deepest delegation level (1: only the root delegates).
func (s Agent) DepthLimit() int { return def(s.MaxDepth, 1) }

// FanoutLimit is the fan-out size above which spawn.plan asks the policy.
func (s Agent) FanoutLimit() int { return def(s.FanoutThreshold, 8) }

// PlansFirst reports whether kind starts with a planning phase.
func (s Agent) PlansFirst(kind string) bool {
	if v, ok := s.PlanFirst[kind]; ok {
		return v
	}
	return true
}

// ApprovalFor is the approval policy of a mutating tool.
func (s Agent) ApprovalFor(tool string) string {
	if p, ok := s.Approval[tool]; ok {
		return p
	}
	return PolicyAuto
}

// ApprovalWait is how long an approval may wait before it counts as no.
func (s Agent) ApprovalWait() time.Duration {
	if s.ApprovalTimeout > 0 {
		return s.ApprovalTimeout
	}
	return 2 * time.Minute
}

// DefaultEstimates are the tokens reserved per kind when not configured.
var DefaultEstimates = map[string]int64{
	"root": 400_000, "explore": 60_000, "planner": 100_000, "worker": 200_000,
}

// EstimateFor is the token reservation of a new agent of kind.
func (s Agent) EstimateFor(kind string) int64 {
	if v := s.Estimates[kind]; v > 0 {
		return v
	}
	if v := DefaultEstimates[kind]; v > 0 {
		return v
	}
	return 100_000
}

// TopUpFor is how many tokens an agent of kind asks for when its lease runs out.
func (s Agent) TopUpFor(kind string) int64 {
	if s.TopUp > 0 {
		return s.TopUp
	}
	return s.EstimateFor(kind) / 4
}

func def(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}
