package actors

import (
	"github.com/troupe-ai/troupe/actors/convo"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
	agenttools "github.com/troupe-ai/troupe/tools/agent"
)

// Agent end states.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Reasons an agent ended.
const (
	ReasonFinished        = "finished"
	ReasonRoundLimit      = "round_limit"
	ReasonBudgetExhausted = "budget_exhausted"
	ReasonError           = "error"
	ReasonCancelled       = "cancelled"
	ReasonPlanSubmitted   = "plan_submitted"
	// ReasonBudgetUnreachable: a remote agent's run budget stopped
	// answering (its orchestrator died): it made no further model call.
	ReasonBudgetUnreachable = "budget_unreachable"
)

// AgentResult is how an agent ended: its final text (or best text so far),
// why it ended, and what it spent.
type AgentResult struct {
	Agent     string           `json:"agent"`
	Kind      string           `json:"kind"`
	Status    string           `json:"status"`
	Reason    string           `json:"reason"`
	Text      string           `json:"text"`
	Plan      *agenttools.Plan `json:"plan,omitempty"`
	Err       string           `json:"error,omitempty"`
	Rounds    int              `json:"rounds"`
	Usage     llm.Usage        `json:"usage"`
	Cost      float64          `json:"cost"`
	ToolCalls int64            `json:"tool_calls"`
	Model     string           `json:"model,omitempty"`
	// Changed lists the workspace paths the agent's file tools
	// (write_file, edit_file, apply_patch) changed, sorted; what shell
	// commands changed is not known.
	Changed []string `json:"changed,omitempty"`
	// Node is the node that ran the agent ("" when it ran here).
	Node string `json:"node,omitempty"`
	// Changes is what became of the changes of an agent that worked in
	// its own worktree (nil: none, or it worked in the workspace).
	Changes *messages.ChangeOutcome `json:"changes,omitempty"`
	// Changeset is a remote agent's changes relative to its task's
	// snapshot, as its node captured them: its parent's side merges them
	// into the workspace (Changes tells how that went).
	Changeset *messages.Changeset `json:"-"`
	// Nested are the changesets of a remote agent's descendants that did
	// not merge into their parents' directories on its node: they travel
	// in its result and the requester keeps them (bringNested).
	Nested []messages.NestedChanges `json:"-"`
	// NestedErr says why nested changesets of a remote agent's result were
	// refused or lost on the way.
	NestedErr string `json:"-"`
	// ChangesErr says why a remote agent's node could not capture or
	// send its changes, and where it kept them (messages.Result's
	// changes_error); the requester lists it in the run's changes.
	ChangesErr string `json:"-"`
	// NestedChanges is what became of them on the requester's side.
	NestedChanges []messages.ChangeOutcome `json:"nested_changes,omitempty"`
}

// Cancel asks an agent to stop: its running model call or tools are
// cancelled, its children too, and it ends with status cancelled.
type Cancel struct{ Reason string }

// Status asks an agent for a StatusReply; it is answered at once, whatever
// the agent is doing.
type Status struct{}

// StatusReply is an agent's state.
type StatusReply struct {
	Agent            string  `json:"agent"`
	Kind             string  `json:"kind"`
	Round            int     `json:"round"`
	Phase            string  `json:"phase"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	Cost             float64 `json:"cost"`
	CurrentTool      string  `json:"current_tool,omitempty"`
	Model            string  `json:"model,omitempty"`
	Ended            bool    `json:"ended"`
}

// SendInput adds a message to an agent's conversation before its next
// round (steering).
type SendInput struct{ Message string }

// SendInputReply answers SendInput.
type SendInputReply struct{ Accepted bool }

// Internal messages of the round loop.
type (
	startRound struct{}
	// usageDone is the budget's answer to a model call's usage report.
	usageDone struct {
		budgetState  messages.BudgetState
		budgetLent   int64 // tokens of this agent's lease held by live children
		budgetLeft   int64 // tokens the lease has left after the charge
		chargedCalls int64 // earlier tool calls charged with this usage
		budgetLost   error // the budget did not answer the usage report (budget.ErrUnreachable)
	}
	modelDone struct {
		resp        llm.Response
		err         error
		maintenance convo.Maintenance
		maintErr    error
		usageDone   // the charge's answer, unless usageAsync
		// usageAsync: the charge is on its way (the answer has tool calls
		// to run meanwhile); a usageDone message brings its answer.
		usageAsync bool
		model      string
		// The prompt as sent and its tool results, in estimated tokens.
		contextTokens, toolResultTokens int
	}
	toolsDone struct {
		calls       []messages.ToolCall
		results     []tools.Result
		advisory    convo.Advisory
		err         error                // the conversation refused the results (a bug)
		switched    bool                 // submit_plan moved the agent to execution
		budgetState messages.BudgetState // after charging the batch's tool calls
		budgetLent  int64
		budgetLeft  int64
		toolCalls   int64    // calls run (not refused)
		changed     []string // paths changed by successful file tools
		doom        doomState
		charged     bool  // toolCalls were charged to the budget already
		budgetLost  error // the budget did not answer (budget.ErrUnreachable)
		// extraUsage and extraCost are what web_fetch's extractions cost
		// (already charged to the budget).
		extraUsage llm.Usage
		extraCost  float64
		loaded     []string // deferred tools this step loaded
	}
	stepPanic struct {
		where string
		value any
	}
)

// checkpointState is the loop's own state kept in Checkpoint.State.
type checkpointState struct {
	PlanRounds int    `json:"plan_rounds,omitempty"`
	BestText   string `json:"best_text,omitempty"`
	Seq        uint64 `json:"seq"`
	// Reads is the read-before-write tracker (tools.ReadTracker.Snapshot),
	// so a resumed agent may edit the files it had read.
	Reads map[string]string `json:"reads,omitempty"`
	// LoadedTools are the deferred tools the agent loaded.
	LoadedTools []string `json:"loaded_tools,omitempty"`
}
