package messages

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ProtocolVersion is the version of the messages agents exchange across
// processes (tasks, results, budget, control). A receiver refuses another
// version with a version error.
const ProtocolVersion = 1

// Error codes on the wire: a small, stable set.
const (
	CodeBadRequest      = "bad_request"      // the request is malformed; the message names the field
	CodeNotFound        = "not_found"        // no such agent, lease or task
	CodeConflict        = "conflict"         // the ID is taken (a lease exists for the agent)
	CodeBudgetExhausted = "budget_exhausted" // the run hit a limit
	CodeLimitExceeded   = "limit_exceeded"   // the request can never be granted
	CodeReleased        = "released"         // the lease was released already
	CodeCancelled       = "cancelled"        // withdrawn or cancelled
	CodeTimeout         = "timeout"          // waited too long
	CodeUnavailable     = "unavailable"      // nobody serves it, or it stopped
	CodeUnreachable     = "unreachable"      // the run's budget did not answer for node.budget_timeout
	CodeVersion         = "version"          // another protocol version
	CodeInternal        = "internal"         // anything else
)

// Error is an error on the wire.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// ErrBadMessage marks bytes from the wire that are not a valid message.
var ErrBadMessage = errors.New("bad message")

// ErrVersion marks a message of another protocol version.
var ErrVersion = errors.New("protocol version mismatch")

// Decode reads a wire message of type T (a pointer-receiver Validate is
// called): size-limited, JSON, version-checked and validated.
func Decode[T any, P interface {
	*T
	Validate() error
}](data []byte, maxBytes int) (T, error) {
	var v T
	if len(data) > maxBytes {
		return v, fmt.Errorf("%w: %d bytes, limit %d", ErrBadMessage, len(data), maxBytes)
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	if err := P(&v).Validate(); err != nil {
		return v, err
	}
	return v, nil
}

// checkVersion is the first check of every Validate.
func checkVersion(what string, v int) error {
	if v != ProtocolVersion {
		return fmt.Errorf("%w: %s of version %d, this build speaks %d", ErrVersion, what, v, ProtocolVersion)
	}
	return nil
}

// Task is a child agent placed on the queue: everything a node needs to
// run it, and nothing else (a node keeps no other state).
type Task struct {
	V      int    `json:"v"`
	Run    string `json:"run"`
	ID     string `json:"agent"`
	Parent string `json:"parent"`
	Kind   string `json:"kind"`
	Task   string `json:"task"`
	// Context is the parent's context for the child.
	Context string `json:"context,omitempty"`
	// Model is the model chosen for its first round; ModelOverride the
	// model the delegate call asked for ("" routes by kind); ParentModel
	// the parent's, for kinds whose model follows their parent's.
	Model         string `json:"model"`
	ModelOverride string `json:"model_override,omitempty"`
	ParentModel   string `json:"parent_model,omitempty"`
	Depth         int    `json:"depth"`
	Background    bool   `json:"background,omitempty"`
	// Tools is the kind's tool set as the child gets it (delegation tools
	// removed at the depth limit); a node never widens it.
	Tools []string `json:"tools"`
	// LeaseTokens is the budget granted to the child.
	LeaseTokens int64 `json:"lease_tokens"`
	// Limits are the run's agent and tool limits as the orchestrator
	// configured them; a node applies them instead of its own (nil: the
	// node's own).
	Limits *TaskLimits `json:"limits,omitempty"`
	// Budget is the run's budget rules for the agent and the children it
	// delegates (nil: the node's own), so that a remote agent reserves
	// and tops up exactly as it would at home.
	Budget *TaskBudget `json:"budget,omitempty"`
	// Workspace names the repository the task is for (WorkspaceKey of the
	// orchestrator's workspace; "" when it has no identity). A node that
	// serves another repository refuses the task.
	Workspace string `json:"workspace,omitempty"`
	// Attempt is the delivery attempt (set by the node that runs it:
	// Prior plus the queue's delivery count).
	Attempt int `json:"attempt,omitempty"`
	// Prior counts the attempts made before this task was queued again:
	// the orchestrator reissues a task whose node was lost, under a new
	// secret, and the new copy's attempts continue the count.
	Prior int `json:"prior,omitempty"`
	// RunLeaseMS is the run's lease in milliseconds (0: the run has
	// none): its orchestrator rewrites the run's entry in the runs bucket
	// while it lives, and a node stops the run's agents once the entry
	// is older than this.
	RunLeaseMS int64 `json:"run_lease_ms,omitempty"`
	// LostMS is how long the run lets a node go without a heartbeat
	// before it hands the node's tasks to others (node.lease_timeout; 0:
	// two of the node's own heartbeats). A node whose heartbeats have not
	// got through for most of it stops the task first.
	LostMS int64 `json:"lost_ms,omitempty"`
	// Origin names the process that sent it, for logs.
	Origin string `json:"origin,omitempty"`
	// Secret is a random key the run made for this task: only the node
	// that pulled the task knows it, and its result proves it (an
	// HMAC-SHA256 of the result's bytes in the Troupe-Proof header). It
	// never goes into an event or a log.
	Secret string `json:"secret,omitempty"`
	// Claims says the run answers each start notice (StartReply): a node
	// starts the task only once the run said the delivery is its own, so
	// a delivery the run gave up on as lost (and queued again) never
	// runs. Without it (an older run) the notice is not awaited.
	Claims bool `json:"claims,omitempty"`
	// Snapshot is the requester's workspace as the agent is to see it:
	// the node works in a worktree of it, never in its own checkout (nil:
	// the node's checkout, as before snapshots travelled).
	Snapshot *TaskSnapshot `json:"snapshot,omitempty"`
}

// Validate checks a task received from the wire.
func (t *Task) Validate() error {
	if err := checkVersion("task", t.V); err != nil {
		return err
	}
	for _, f := range []struct{ what, v string }{{"run", t.Run}, {"agent", t.ID}, {"parent", t.Parent}, {"kind", t.Kind}} {
		if err := checkID(f.what, f.v); err != nil {
			return err
		}
	}
	if strings.TrimSpace(t.Task) == "" {
		return fmt.Errorf("%w: task %s has no task text", ErrBadMessage, t.ID)
	}
	if t.Depth < 0 || t.LeaseTokens < 0 || t.Prior < 0 || t.RunLeaseMS < 0 || t.LostMS < 0 {
		return fmt.Errorf("%w: task %s: negative depth or lease", ErrBadMessage, t.ID)
	}
	if err := t.Limits.validate(); err != nil {
		return fmt.Errorf("%w: task %s: %v", ErrBadMessage, t.ID, err)
	}
	if err := t.Budget.validate(); err != nil {
		return fmt.Errorf("%w: task %s: budget: %v", ErrBadMessage, t.ID, err)
	}
	return t.Snapshot.Validate()
}

// TaskBudget is the run's budget rules as a task carries them: what an
// agent reserves for each child it starts and how much more it asks for
// when its lease runs out. The run's limits themselves (tokens, cost,
// per-kind caps) are enforced by the run's budget service, which every
// remote agent charges.
type TaskBudget struct {
	// Estimates are the tokens reserved per kind when an agent of that
	// kind starts (agent.estimates; kinds not named take the defaults).
	Estimates map[string]int64 `json:"estimates,omitempty"`
	// TopUp is agent.top_up: the tokens an agent asks for when its lease
	// runs out (0: a quarter of its kind's estimate).
	TopUp int64 `json:"top_up,omitempty"`
}

func (b *TaskBudget) validate() error {
	if b == nil {
		return nil
	}
	if b.TopUp < 0 {
		return errors.New("negative top_up")
	}
	for kind, v := range b.Estimates {
		if err := checkID("estimates kind", kind); err != nil {
			return err
		}
		if v < 0 {
			return fmt.Errorf("negative estimate for %s", kind)
		}
	}
	return nil
}

// TaskLimits are the limits an agent runs under, carried by its task so
// that a remote agent runs exactly as a local child would. Zero values
// leave the node's own setting.
type TaskLimits struct {
	// MaxRounds and PlanningRounds bound the agent's rounds.
	MaxRounds      int `json:"max_rounds,omitempty"`
	PlanningRounds int `json:"planning_rounds,omitempty"`
	// ToolTimeoutMS bounds one tool call, in milliseconds.
	ToolTimeoutMS int64 `json:"tool_timeout_ms,omitempty"`
	// Truncation overrides the caps of named tools' output.
	Truncation map[string]TaskTruncation `json:"truncation,omitempty"`
	// ResultCap bounds the text a child hands its parent, in characters.
	ResultCap int `json:"result_cap,omitempty"`
	// Sandbox is the OS sandbox the requester runs this kind's commands
	// in (nil: none); a node may tighten it, never widen it.
	Sandbox *TaskSandbox `json:"sandbox,omitempty"`
}

// TaskSandbox is what a task asks of the node's sandbox.
type TaskSandbox struct {
	// Network is allow, deny or loopback.
	Network string `json:"network"`
	// Required: a node that cannot confine the commands must not run them.
	Required bool `json:"required,omitempty"`
}

// TaskTruncation is one tool's output cap on the wire.
type TaskTruncation struct {
	// Strategy is "none", "head", "head_tail" or "head_lines".
	Strategy  string  `json:"strategy"`
	MaxBytes  int     `json:"max_bytes,omitempty"`
	MaxLines  int     `json:"max_lines,omitempty"`
	TailRatio float64 `json:"tail_ratio,omitempty"`
}

// Truncation strategies on the wire.
const (
	TruncateNone      = "none"
	TruncateHead      = "head"
	TruncateHeadTail  = "head_tail"
	TruncateHeadLines = "head_lines"
)

func (l *TaskLimits) validate() error {
	if l == nil {
		return nil
	}
	if l.MaxRounds < 0 || l.PlanningRounds < 0 || l.ToolTimeoutMS < 0 || l.ResultCap < 0 {
		return errors.New("negative limit")
	}
	for tool, t := range l.Truncation {
		switch t.Strategy {
		case TruncateNone, TruncateHead, TruncateHeadTail, TruncateHeadLines:
		default:
			return fmt.Errorf("truncation of %s: unknown strategy %q", tool, t.Strategy)
		}
		if t.MaxBytes < 0 || t.MaxLines < 0 || t.TailRatio < 0 || t.TailRatio > 1 {
			return fmt.Errorf("truncation of %s: caps must be positive and tail_ratio within 0..1", tool)
		}
	}
	return nil
}

// Result is an agent's end as it crosses a process: a remote agent's
// result, published by its node before it acks the task.
type Result struct {
	V         int             `json:"v"`
	Run       string          `json:"run"`
	Agent     string          `json:"agent"`
	Kind      string          `json:"kind"`
	Node      string          `json:"node,omitempty"`
	Attempt   int             `json:"attempt,omitempty"`
	Status    string          `json:"status"`
	Reason    string          `json:"reason"`
	Text      string          `json:"text,omitempty"`
	Plan      json.RawMessage `json:"plan,omitempty"`
	Error     *Error          `json:"error,omitempty"`
	Rounds    int             `json:"rounds"`
	TokensIn  int             `json:"tokens_in"`
	TokensOut int             `json:"tokens_out"`
	Cached    int             `json:"tokens_cached,omitempty"`
	CostUSD   float64         `json:"cost_usd"`
	ToolCalls int64           `json:"tool_calls"`
	Model     string          `json:"model,omitempty"`
	Changed   []string        `json:"changed,omitempty"`
	// Changes are the agent's changes relative to the task's snapshot,
	// for the requester to merge into its workspace.
	Changes *Changeset `json:"changes,omitempty"`
	// Nested are the changesets of agents the agent started on its node
	// that did not merge into its directory (see NestedChanges). Validate
	// leaves them to CheckNested, so that a refused one costs nothing else.
	Nested []NestedChanges `json:"nested,omitempty"`
	// ChangesError says why the node could not capture or send the
	// agent's changes, and where on the node it kept them (its worktree,
	// and the patch when there is one).
	ChangesError string `json:"changes_error,omitempty"`
	// RelayEnds says the node ends the relay of this delivery's events
	// with an end marker (see wire_relay.go): the requester waits for it
	// before the run's end, so every event the relay carries is stored
	// before run.finished.
	RelayEnds bool `json:"relay_ends,omitempty"`
}

// Validate checks a result received from the wire.
func (r *Result) Validate() error {
	if err := checkVersion("result", r.V); err != nil {
		return err
	}
	if err := checkID("run", r.Run); err != nil {
		return err
	}
	if err := checkID("agent", r.Agent); err != nil {
		return err
	}
	if err := checkOptID("node", r.Node); err != nil {
		return err
	}
	switch r.Status {
	case "completed", "failed", "cancelled":
	default:
		return fmt.Errorf("%w: result status %q", ErrBadMessage, r.Status)
	}
	return r.Changes.validate()
}

// Status is an agent's state, as a status request answers it.
type Status struct {
	Agent       string  `json:"agent"`
	Kind        string  `json:"kind"`
	Round       int     `json:"round"`
	Phase       string  `json:"phase"`
	TokensIn    int     `json:"tokens_in"`
	TokensOut   int     `json:"tokens_out"`
	CostUSD     float64 `json:"cost_usd"`
	CurrentTool string  `json:"current_tool,omitempty"`
	Model       string  `json:"model,omitempty"`
	Ended       bool    `json:"ended"`
}

// Validate checks a status reply.
func (s *Status) Validate() error { return checkID("agent", s.Agent) }

// Cancel asks an agent (or a whole run) to stop.
type Cancel struct {
	V      int    `json:"v"`
	Reason string `json:"reason"`
	// Node, when set, limits an agent's cancel to the copy running on
	// that node: the orchestrator revokes a lost node's claim on a task
	// it has handed to another node, and only the lost node's copy stops.
	Node string `json:"node,omitempty"`
	// Attempt, with Node, names the delivery revoked: the node stops its
	// copy only if that copy runs this attempt or an earlier one, never a
	// later delivery of the task it took meanwhile (0: whichever copy).
	Attempt int `json:"attempt,omitempty"`
}

// Validate checks a cancel request.
func (c *Cancel) Validate() error {
	if c.Attempt < 0 {
		return fmt.Errorf("%w: cancel of attempt %d", ErrBadMessage, c.Attempt)
	}
	return checkVersion("cancel", c.V)
}

// Steer adds a message to a running agent's conversation before its next
// round (send_input).
type Steer struct {
	V       int    `json:"v"`
	Message string `json:"message"`
}

// Validate checks a steer request.
func (s *Steer) Validate() error {
	if err := checkVersion("steer", s.V); err != nil {
		return err
	}
	if strings.TrimSpace(s.Message) == "" {
		return fmt.Errorf("%w: steer: empty message", ErrBadMessage)
	}
	return nil
}

// SteerReply answers Steer: false when the agent had ended.
type SteerReply struct {
	Accepted bool   `json:"accepted"`
	Error    *Error `json:"error,omitempty"`
}

// Validate accepts every reply.
func (s *SteerReply) Validate() error { return nil }
