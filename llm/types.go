package llm

import (
	"context"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// Role is the author of a message.
type Role string

// The roles of Chat Completions.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one message of a conversation, provider-neutral. An assistant
// message may carry tool calls; a tool message answers one of them by ID.
type Message struct {
	Role       Role                `json:"role"`
	Content    string              `json:"content,omitempty"`
	Reasoning  string              `json:"reasoning,omitempty"`
	ToolCalls  []messages.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string              `json:"tool_call_id,omitempty"`
	Name       string              `json:"name,omitempty"` // the tool's name, on tool messages
}

// Usage is the token usage the provider reported for one response.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	CachedTokens     int `json:"cached_tokens,omitempty"`
}

// Total is prompt plus completion tokens.
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

// Request is one model call.
type Request struct {
	Model    string
	Messages []Message
	Tools    []messages.ToolSpec
	// Agent, Run and Kind identify the caller. They are sent as the
	// X-Troupe-Agent, X-Troupe-Run and X-Troupe-Kind headers (never any secret) so
	// logs and the scripted test server can tell agents apart.
	Agent string
	Run   string
	Kind  string
	// MaxTokens caps the completion when > 0.
	MaxTokens int
	// Priority weighs the run's share of a rate-limited key against
	// other runs' (run.priority; 0 counts as 1), and Depth is the
	// caller's depth in its run's tree (0: the root), served first.
	Priority int
	Depth    int
	// OnRate, when set, hears of rate limits: a wait for the call's turn,
	// its end, a provider's 429, 529 or 503.
	OnRate func(RateEvent)
	// MaxToolCalls, when > 0, refuses an answer with more tool calls
	// (ErrOverLimit) as soon as the one over the cap begins.
	MaxToolCalls int
}

// Response is a model's answer to one Request.
type Response struct {
	Message      Message
	Usage        Usage
	FinishReason string
	Model        string
	Cost         float64       // USD from the pricing table; 0 when the model has no price
	Priced       bool          // the model has a price, so Cost means something
	Attempts     int           // 1 plus the retries it took
	Duration     time.Duration // wall time of the call, retries included
}

// Delta is a streamed fragment of the answer, for live output.
type Delta struct {
	Content   string
	Reasoning string
}

// Client calls a model. Implementations are safe for concurrent use.
type Client interface {
	// Complete sends req and returns the whole answer. onDelta, if not nil,
	// receives streamed fragments as they arrive.
	Complete(ctx context.Context, req Request, onDelta func(Delta)) (Response, error)
}
