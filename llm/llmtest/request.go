package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The headers troupe's client sends to identify the caller.
const (
	HeaderAgent = "X-Troupe-Agent"
	HeaderRun   = "X-Troupe-Run"
	HeaderKind  = "X-Troupe-Kind"
)

// Recorded is one request the server received and what it did with it.
type Recorded struct {
	Seq      int       // order of arrival, from 1
	Received time.Time // when the request arrived
	// Answered is when the end of the answer (or the error) began to be
	// written; zero if none was (dropped, abandoned).
	Answered time.Time
	// Ended is when the request was done with: answered, failed, or given
	// up by its client (Canceled). A call is in flight from Received to
	// Ended.
	Ended time.Time
	Agent string // X-Troupe-Agent header
	Kind  string // X-Troupe-Kind header
	Run   string // X-Troupe-Run header
	// Header holds every request header, Authorization included: assert
	// on it, never print it.
	Header http.Header
	Model  string
	Stream bool
	// IncludeUsage reports stream_options.include_usage.
	IncludeUsage bool
	// ParallelToolCalls is the request's parallel_tool_calls (nil if absent).
	ParallelToolCalls *bool
	MaxTokens         int
	Messages          []RecordedMessage
	Tools             []string // tool names in the order sent
	Task              string   // the first user message
	Body              []byte   // the raw request body

	// Script is the index of the AgentScript that answered, -1 if none.
	Script int
	// Round is the agent's round this request belonged to, from 1.
	Round int
	// Reply is the turn that was played (a failure turn for failures).
	Reply Turn
	// Exhausted reports a request answered "(script exhausted)" because
	// its agent had no turns left or no script matched.
	Exhausted bool
	// Canceled reports that the request's context ended before an answer.
	Canceled bool
	// Err is set when the request itself was malformed (answered 400).
	Err string
	// Status is the HTTP status answered (0 when none was).
	Status int
	// RateLimited reports a request refused 429 by the server's rate
	// limit (SetRateLimit) or a refusal window (RefuseAll).
	RateLimited bool
}

// RecordedMessage is one message of a request, decoded.
type RecordedMessage struct {
	Role       string
	Content    string // text parts joined when the content was an array
	Reasoning  string // reasoning_content, when the client sent it back
	ToolCalls  []ToolCall
	ToolCallID string
	Name       string
	// ContentPresent reports whether the "content" key was present (even "").
	ContentPresent bool
}

// wireRequest is the part of a Chat Completions request the server reads.
type wireRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	ParallelToolCalls   *bool         `json:"parallel_tool_calls"`
	MaxTokens           int           `json:"max_tokens"`
	MaxCompletionTokens int           `json:"max_completion_tokens"`
	Messages            []wireMessage `json:"messages"`
	Tools               []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

type wireMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCallID       string          `json:"tool_call_id"`
	Name             string          `json:"name"`
	ToolCalls        []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// decodeRequest fills rec from the body and headers.
func decodeRequest(rec *Recorded, h http.Header, body []byte) error {
	rec.Header = h.Clone()
	rec.Agent = h.Get(HeaderAgent)
	rec.Kind = h.Get(HeaderKind)
	rec.Run = h.Get(HeaderRun)
	rec.Body = body
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return fmt.Errorf("request body is not a Chat Completions request: %w", err)
	}
	rec.Model = w.Model
	rec.Stream = w.Stream
	rec.IncludeUsage = w.StreamOptions != nil && w.StreamOptions.IncludeUsage
	rec.ParallelToolCalls = w.ParallelToolCalls
	rec.MaxTokens = w.MaxCompletionTokens
	if rec.MaxTokens == 0 {
		rec.MaxTokens = w.MaxTokens
	}
	for _, t := range w.Tools {
		rec.Tools = append(rec.Tools, t.Function.Name)
	}
	rec.Messages = make([]RecordedMessage, 0, len(w.Messages))
	for i, m := range w.Messages {
		rm := RecordedMessage{Role: m.Role, Reasoning: m.ReasoningContent,
			ToolCallID: m.ToolCallID, Name: m.Name}
		content, present, err := decodeContent(m.Content)
		if err != nil {
			return fmt.Errorf("messages[%d].content: %w", i, err)
		}
		rm.Content, rm.ContentPresent = content, present
		for _, c := range m.ToolCalls {
			rm.ToolCalls = append(rm.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name,
				Args: json.RawMessage(c.Function.Arguments)})
		}
		if rec.Task == "" && m.Role == "user" {
			rec.Task = rm.Content
		}
		rec.Messages = append(rec.Messages, rm)
	}
	return nil
}

// decodeContent reads a message content that is a string, null, or an
// array of parts (the text parts are joined).
func decodeContent(raw json.RawMessage) (string, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, true, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", true, fmt.Errorf("want a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), true, nil
}

// chars is the number of characters of the request's messages, for usage
// estimates.
func (r *Recorded) chars() int {
	n := 0
	for _, m := range r.Messages {
		n += len(m.Content) + len(m.Reasoning)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Args)
		}
	}
	return n
}
