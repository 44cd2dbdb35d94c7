package llm

import (
	"errors"
	"fmt"
)

// Defaults of the caps on one model answer (Config.MaxTextBytes,
// Config.MaxToolCallBytes).
const (
	DefaultMaxTextBytes     = 4 << 20
	DefaultMaxToolCallBytes = 1 << 20
)

// ErrOverLimit reports a model answer that passed one of the caps on its
// size (text, one tool call's arguments, or the number of tool calls).
// The answer is refused whole and the call is not retried by the client:
// the same request is likely to get the same answer, so what to do next
// is the caller's to decide. A *LimitError carries the details.
var ErrOverLimit = errors.New("llm: model answer over a limit")

// The caps a LimitError names.
const (
	LimitText      = "text"      // answer text and reasoning, bytes
	LimitToolCall  = "tool_call" // one tool call's arguments, bytes
	LimitToolCalls = "tool_calls"
	LimitEvent     = "event" // one event of the stream, bytes
	LimitBody      = "body"  // a whole non-streamed answer, bytes
)

// LimitError is an answer refused for passing a cap: What (LimitText,
// LimitToolCall, ...) passed Limit, and Setting names the configuration
// key that sets it. Reading stopped there, so a hostile server cannot make
// the client hold more than about the cap.
type LimitError struct {
	What    string
	Limit   int64
	Setting string
}

// Error says which cap was passed and where it is set.
func (e *LimitError) Error() string {
	unit := " bytes"
	if e.What == LimitToolCalls {
		unit = ""
	}
	return fmt.Sprintf("llm: model answer refused: its %s passed the limit of %d%s (%s)",
		limitNoun(e.What), e.Limit, unit, e.Setting)
}

// Unwrap makes errors.Is(err, ErrOverLimit) true.
func (e *LimitError) Unwrap() error { return ErrOverLimit }

func limitNoun(what string) string {
	switch what {
	case LimitText:
		return "text"
	case LimitToolCall:
		return "tool call's arguments"
	case LimitToolCalls:
		return "number of tool calls"
	case LimitEvent:
		return "stream event"
	default:
		return "body"
	}
}

// caps are the limits one call's answer is read under; a zero field has
// no cap.
type caps struct {
	text, toolCall int64
	toolCalls      int // 0: no cap
}

// overBytes reports n over the cap limit (0: no cap).
func (caps) overBytes(limit int64, n int) bool { return limit > 0 && int64(n) > limit }

// event bounds one server-sent event: a legitimate chunk carries a small
// delta, far below either cap; one larger than both is no answer.
func (c caps) event() int64 { return c.text + c.toolCall + 64<<10 }

// body bounds a non-streamed answer: its text and one tool call's worth
// of arguments, plus room for the JSON around them.
func (c caps) body() int64 { return c.text + c.toolCall + 1<<20 }

func (c *OpenAIClient) capsFor(req Request) caps {
	return caps{text: c.cfg.MaxTextBytes, toolCall: c.cfg.MaxToolCallBytes, toolCalls: req.MaxToolCalls}
}

// overText and the others build the LimitError of each cap.
func (c caps) overText() error {
	return &LimitError{What: LimitText, Limit: c.text, Setting: "model.max_response_bytes.text"}
}

func (c caps) overToolCall() error {
	return &LimitError{What: LimitToolCall, Limit: c.toolCall, Setting: "model.max_response_bytes.tool_call"}
}

func (c caps) overToolCalls() error {
	return &LimitError{What: LimitToolCalls, Limit: int64(c.toolCalls), Setting: "agent.max_tool_calls_per_round"}
}

func (c caps) overEvent() error {
	return &LimitError{What: LimitEvent, Limit: c.event(), Setting: "model.max_response_bytes"}
}

func (c caps) overBody() error {
	return &LimitError{What: LimitBody, Limit: c.body(), Setting: "model.max_response_bytes"}
}
