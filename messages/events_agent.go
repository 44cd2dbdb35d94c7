package messages

import "encoding/json"

// AgentSpawned is the data of agent.spawned, emitted by a parent when it
// starts a child.
type AgentSpawned struct {
	Child      string `json:"child" doc:"the child's agent ID"`
	Kind       string `json:"kind" doc:"the child's kind"`
	Model      string `json:"model" doc:"the model of its first round"`
	Task       string `json:"task" doc:"its task, cut at 500 characters"`
	Background bool   `json:"background,omitempty" doc:"started in the background (delegate background=true)"`
	Depth      int    `json:"depth" doc:"delegation depth: 1 for the root's children"`
	Placement  string `json:"placement" doc:"local, or remote (a node runs it)"`
}

// AgentStarted is the data of agent.started, an agent's first event.
type AgentStarted struct {
	Task       string   `json:"task" doc:"the agent's task"`
	Depth      int      `json:"depth" doc:"delegation depth: 0 for the root"`
	Phase      string   `json:"phase" doc:"planning or executing"`
	Round      int      `json:"round" doc:"the round it starts after: 0, or a checkpoint's round when resumed"`
	Tools      []string `json:"tools" doc:"the tools of its current phase"`
	Resumed    bool     `json:"resumed,omitempty" doc:"true when it continues from a checkpoint"`
	Background bool     `json:"background,omitempty" doc:"started in the background"`
}

// RoundStarted is the data of round.started.
type RoundStarted struct {
	Round          int    `json:"round" doc:"the round number, from 1"`
	Phase          string `json:"phase" doc:"planning or executing"`
	Model          string `json:"model" doc:"the model of this round"`
	EstimateTokens int    `json:"estimate_tokens" doc:"estimated prompt tokens of the conversation"`
	Messages       int    `json:"messages" doc:"messages in the conversation"`
	ToolTokens     int    `json:"tool_tokens,omitempty" doc:"estimated tokens of the tool definitions sent with this round's request"`
	ToolsDeferred  int    `json:"tools_deferred,omitempty" doc:"tools the agent may call that were listed by name only (search_tools loads them)"`
}

// LLMResponse is the data of llm.response: one model call's answer.
type LLMResponse struct {
	Round        int     `json:"round" doc:"the round"`
	Model        string  `json:"model" doc:"the model that answered"`
	TokensIn     int     `json:"tokens_in" doc:"prompt tokens of this call"`
	TokensOut    int     `json:"tokens_out" doc:"completion tokens of this call"`
	TokensCached int     `json:"tokens_cached,omitempty" doc:"prompt tokens served from the provider's cache"`
	CostUSD      float64 `json:"cost_usd" doc:"dollars of this call (0 when the model is not priced: see cost_known)"`
	CostKnown    bool    `json:"cost_known" doc:"the model has a price, so cost_usd means something"`
	FinishReason string  `json:"finish_reason" doc:"stop, tool_calls, length, ..."`
	// ContextTokens and ToolResultTokens are estimated with the same
	// characters-per-token ratio, so their quotient is the share of the
	// prompt that tool results take.
	ContextTokens    int      `json:"context_tokens,omitempty" doc:"estimated tokens of the prompt as sent (after eviction and compaction)"`
	ToolResultTokens int      `json:"tool_result_tokens,omitempty" doc:"estimated tokens of the tool results in that prompt"`
	ToolCalls        []string `json:"tool_calls,omitempty" doc:"names of the tools the model called, in order"`
	TextChars        int      `json:"text_chars" doc:"characters of text in the answer"`
	Attempts         int      `json:"attempts" doc:"attempts the call took (retries included)"`
	DurationMS       int64    `json:"duration_ms" doc:"wall time of the call in milliseconds"`
	TotalTokens      int      `json:"total_tokens" doc:"the agent's tokens so far (in + out)"`
	TotalCostUSD     float64  `json:"total_cost_usd" doc:"the agent's dollars so far"`
}

// LLMDelta is the data of llm.delta: streamed text and reasoning of a
// model call, coalesced (at most about ten a second per agent). Emitted
// only when events.deltas is on.
type LLMDelta struct {
	Round     int    `json:"round" doc:"the round"`
	Text      string `json:"text,omitempty" doc:"answer text since the previous delta"`
	Reasoning string `json:"reasoning,omitempty" doc:"reasoning text since the previous delta"`
	Reset     bool   `json:"reset,omitempty" doc:"the call was retried: discard this round's earlier deltas"`
}

// LLMRefused is the data of llm.refused: a model's answer passed one of
// the caps on its size and was refused whole, unread past the cap.
type LLMRefused struct {
	Round   int    `json:"round" doc:"the round"`
	Model   string `json:"model" doc:"the model asked"`
	Limit   string `json:"limit" doc:"the cap passed: text, tool_call (one call's arguments), tool_calls (calls in one answer), event (one stream event) or body (a whole non-streamed answer)"`
	Max     int64  `json:"max" doc:"the cap: bytes, or calls for tool_calls"`
	Setting string `json:"setting" doc:"the configuration key that sets it"`
	Error   string `json:"error" doc:"the refusal as the model is told it"`
	Retry   bool   `json:"retry" doc:"the round runs again once, the model told of the refusal; false: the agent fails"`
}

// The phases of llm.throttled.
const (
	ThrottleWaiting = "waiting" // the call waits for its turn with the hub's rate limits
	ThrottleResumed = "resumed" // it got its turn after waiting
	ThrottleRefused = "refused" // the provider answered 429, 529 or 503
)

// LLMThrottled is the data of llm.throttled: a model call waiting for
// its turn under the hub's shared provider rate limits, getting it, or
// refused by the provider.
type LLMThrottled struct {
	Round        int    `json:"round" doc:"the round"`
	Model        string `json:"model" doc:"the model called"`
	Phase        string `json:"phase" doc:"waiting (for its turn), resumed (got it) or refused (the provider answered 429, 529 or 503)"`
	Reason       string `json:"reason,omitempty" doc:"waiting: rate (the run's share of the key has nothing left for now) or frozen (a provider's refusal froze the key for every agent of the hub)"`
	Status       int    `json:"status,omitempty" doc:"refused: the provider's status; waiting, frozen: the status that froze the key"`
	RetryAfterMS int64  `json:"retry_after_ms,omitempty" doc:"refused: the wait the provider asked for"`
	FrozenMS     int64  `json:"frozen_ms,omitempty" doc:"waiting, frozen: milliseconds of the freeze left (each call adds its own jitter of up to 500)"`
	WaitedMS     int64  `json:"waited_ms,omitempty" doc:"resumed: milliseconds the call waited"`
	RPM          int64  `json:"rpm,omitempty" doc:"the key's requests a minute, as known (model.rate_limit or the provider's headers)"`
	TPM          int64  `json:"tpm,omitempty" doc:"the key's tokens a minute, as known"`
	Attempt      int    `json:"attempt" doc:"the call's attempt, from 1"`
}

// ToolStarted is the data of tool.started.
type ToolStarted struct {
	Round    int             `json:"round" doc:"the round"`
	CallID   string          `json:"call_id" doc:"the model's ID of the call"`
	Tool     string          `json:"tool" doc:"the tool's name"`
	Args     json.RawMessage `json:"args" doc:"the call's arguments as the model wrote them"`
	Parallel bool            `json:"parallel,omitempty" doc:"the executor let it run at the same time as another call of its turn (neither waits for the other)"`
}

// ToolFinished is the data of tool.finished.
type ToolFinished struct {
	Round       int            `json:"round" doc:"the round"`
	CallID      string         `json:"call_id" doc:"the model's ID of the call"`
	Tool        string         `json:"tool" doc:"the tool's name"`
	DurationMS  float64        `json:"duration_ms" doc:"how long the call ran, in milliseconds"`
	OutputBytes int            `json:"output_bytes" doc:"bytes of the result the model sees"`
	Cached      bool           `json:"cached,omitempty" doc:"served from the run's result cache"`
	Cacheable   bool           `json:"cacheable,omitempty" doc:"the result could have come from the cache (a read-only tool whose results are cached)"`
	Truncated   bool           `json:"truncated,omitempty" doc:"the output was cut (and spilled to a file)"`
	IsError     bool           `json:"is_error,omitempty" doc:"the result is an error the model reads"`
	CacheHits   int64          `json:"cache_hits,omitempty" doc:"the agent's cache hits so far"`
	Diff        string         `json:"diff,omitempty" doc:"write_file, edit_file, apply_patch: what the call changed, as a unified diff (cut at 8 KiB; metadata says diff_cut, lines_added, lines_removed)"`
	Metadata    map[string]any `json:"metadata,omitempty" doc:"structured details the tool reports (paths, counts, a plan; blind: true for a write to a file not read as it is)"`
}

// CheckpointSaved is the data of checkpoint.saved.
type CheckpointSaved struct {
	Round int    `json:"round" doc:"the round the checkpoint holds (its tool calls pending)"`
	Path  string `json:"path" doc:"the checkpoint file"`
}

// AgentEnded is the data of agent.finished, agent.failed and
// agent.cancelled: an agent's last event.
type AgentEnded struct {
	Status    string          `json:"status" doc:"completed, failed or cancelled"`
	Reason    string          `json:"reason" doc:"finished, round_limit, budget_exhausted, error, cancelled, plan_submitted or budget_unreachable"`
	Rounds    int             `json:"rounds" doc:"rounds the agent ran"`
	TokensIn  int             `json:"tokens_in" doc:"the agent's prompt tokens"`
	TokensOut int             `json:"tokens_out" doc:"the agent's completion tokens"`
	CostUSD   float64         `json:"cost_usd" doc:"the agent's dollars"`
	Unpriced  bool            `json:"unpriced,omitempty" doc:"some of its model calls had no price (model.pricing), so cost_usd says too little"`
	ToolCalls int64           `json:"tool_calls" doc:"tool calls it made"`
	Model     string          `json:"model,omitempty" doc:"the model of its last round"`
	Text      string          `json:"text,omitempty" doc:"its final answer (or best text so far), cut at 2000 characters"`
	Error     string          `json:"error,omitempty" doc:"what went wrong, when it failed"`
	Plan      json.RawMessage `json:"plan,omitempty" doc:"the plan it submitted (summary and steps)"`
	Findings  []string        `json:"findings,omitempty" doc:"explore agents: the path:line references of the answer"`
	Changed   []string        `json:"changed,omitempty" doc:"workspace paths its file tools changed"`
}

// PhaseChanged is the data of agent.phase.
type PhaseChanged struct {
	Phase string `json:"phase" doc:"the new phase: executing"`
	Round int    `json:"round" doc:"the round"`
	By    string `json:"by,omitempty" doc:"submit_plan, or empty when the planning rounds ran out"`
}

// DoomLoop is the data of agent.doom_loop: a call repeated with the same
// arguments too many times in a row was refused.
type DoomLoop struct {
	Round   int             `json:"round" doc:"the round"`
	Tool    string          `json:"tool" doc:"the tool"`
	Args    json.RawMessage `json:"args" doc:"the repeated arguments"`
	Repeats int             `json:"repeats" doc:"how many times in a row"`
}

// SpawnPlanChild is one child of a planned fan-out.
type SpawnPlanChild struct {
	Type            string  `json:"type" doc:"the child's kind"`
	Model           string  `json:"model" doc:"its model"`
	EstimatedTokens int64   `json:"estimated_tokens" doc:"tokens its lease would reserve"`
	EstimatedCost   float64 `json:"estimated_cost_usd" doc:"dollars of those tokens at the model's input price"`
}

// SpawnPlan is the data of spawn.plan: one turn delegates more children
// than the fan-out threshold; the fan-out policy decides.
type SpawnPlan struct {
	Round           int              `json:"round" doc:"the round"`
	Children        []SpawnPlanChild `json:"children" doc:"the children the turn would start"`
	Count           int              `json:"count" doc:"how many"`
	Threshold       int              `json:"threshold" doc:"the fan-out threshold"`
	EstimatedTokens int64            `json:"estimated_tokens" doc:"tokens they would reserve in all"`
	EstimatedCost   float64          `json:"estimated_cost_usd" doc:"dollars of those tokens"`
	Policy          string           `json:"policy" doc:"auto, ask or deny"`
}

// ApprovalRequested is the data of approval.requested: a call waits for a
// yes or no.
type ApprovalRequested struct {
	Tool string          `json:"tool" doc:"the tool (or spawn.plan for a fan-out)"`
	Args json.RawMessage `json:"args" doc:"its arguments"`
	Diff string          `json:"diff,omitempty" doc:"write_file, edit_file, apply_patch: the change the call would make, as a unified diff (cut at 8 KiB)"`
}

// ApprovalDecided is the data of approval.decided.
type ApprovalDecided struct {
	Tool     string `json:"tool" doc:"the tool (or spawn.plan)"`
	Approved bool   `json:"approved" doc:"the answer"`
	By       string `json:"by" doc:"who decided: user, policy, or why it was refused (timeout, no approver)"`
	WaitedMS int64  `json:"waited_ms,omitempty" doc:"how long the answer took"`
}
