package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"time"
)

// Script says what the server answers: a list of agent scripts tried in
// order. The first whose Matcher matches a request answers it; a script whose
// matcher is a Fallback is used only when no other script matched.
type Script struct {
	Agents []AgentScript `json:"agents"`
	// RateLimit, when set, makes the server a rate-limited provider
	// (see RateLimit; SetRateLimit changes it while the server runs).
	RateLimit *RateLimit `json:"rate_limit,omitempty"`
	// PerRun tells agents apart by run too (the X-Troupe-Run header), so
	// every run walks the scripts afresh even when its agents' IDs repeat
	// those of an earlier run (every run's lead agent is "root").
	PerRun bool `json:"per_run,omitempty"`
}

// AgentScript is the conversation of one kind of agent: who it is (Match)
// and its turns in order. Every distinct agent that matches (told apart by
// the X-Troupe-Agent header) walks the turns from the start on its own.
type AgentScript struct {
	Match Matcher `json:"match"`
	Turns []Turn  `json:"turns"`
	// Repeat starts the turns over after the last one instead of answering
	// ExhaustedText (for benchmarks and open-ended demos).
	Repeat bool `json:"repeat,omitempty"`
}

// Matcher selects the requests an AgentScript answers. Every non-empty field
// must match; Fallback alone matches every request.
type Matcher struct {
	// Kind matches the X-Troupe-Kind header exactly.
	Kind string `json:"kind,omitempty"`
	// Agent matches the X-Troupe-Agent header exactly.
	Agent string `json:"agent,omitempty"`
	// TaskContains matches when the first user message contains it.
	TaskContains string `json:"task_contains,omitempty"`
	// Fallback marks the script used when no other script matched.
	Fallback bool `json:"fallback,omitempty"`
}

// Turn is one entry of an agent's script: an answer (Text and/or ToolCalls,
// optional Reasoning), or an injected Failure.
//
// Entries are consumed one per request. An answer completes a round; a
// failure entry does not, so "429, then success" for round 1 is written as
// two entries: the failure, then the answer. The retried request gets the
// answer and is recorded with the same Round as the failure.
type Turn struct {
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	Reasoning string     `json:"reasoning,omitempty"`
	// Usage is reported as given; nil computes it from characters (about
	// four per token) of the request's messages and of the answer.
	Usage *Usage `json:"usage,omitempty"`
	// Latency delays the answer (or the failure); a request whose context
	// ends meanwhile is recorded as Canceled and gets no answer.
	Latency Duration `json:"latency,omitempty"`
	// Fail injects a failure instead of an answer.
	Fail *Failure `json:"fail,omitempty"`
	// Flood, when set, answers with a huge generated answer instead (see
	// Flood).
	Flood *Flood `json:"flood,omitempty"`
	// Dynamic, when set, computes the turn from the request (for tests that
	// echo what they were sent). It is called once per request; the turn it
	// returns must not itself be Dynamic.
	Dynamic func(req Recorded) Turn `json:"-"`
}

// ToolCall is one tool call a scripted turn makes. ID is generated (unique
// per server) when empty. Args is sent as the arguments string; RawArgs,
// when set, is sent instead, verbatim and unchecked, to play a model that
// writes broken JSON.
type ToolCall struct {
	ID      string          `json:"id,omitempty"`
	Name    string          `json:"name"`
	Args    json.RawMessage `json:"args,omitempty"`
	RawArgs string          `json:"raw_args,omitempty"`
}

// arguments is the arguments string sent for c.
func (c ToolCall) arguments() string {
	switch {
	case c.RawArgs != "":
		return c.RawArgs
	case len(c.Args) == 0:
		return "{}"
	}
	return string(c.Args)
}

// Usage is a token count as the provider reports it.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	CachedTokens     int `json:"cached_tokens,omitempty"`
}

// FailureKind names the way an injected failure breaks the exchange.
type FailureKind string

// The failures the server can inject.
const (
	// FailStatus answers with Failure.Status and an OpenAI-style error body.
	FailStatus FailureKind = "status"
	// FailMalformed sends Failure.AfterChunks good chunks, then a chunk
	// that is not valid JSON (a truncated JSON body when not streaming).
	FailMalformed FailureKind = "malformed"
	// FailDrop sends Failure.AfterChunks good chunks, then closes the
	// connection without ending the stream (no response when not streaming).
	FailDrop FailureKind = "drop"
	// FailErrorEvent sends Failure.AfterChunks good chunks, then an SSE
	// event {"error": {...}} and ends the stream, as OpenRouter does when an
	// upstream fails mid-answer; not streaming, it answers HTTP 200 with
	// only the {"error": {...}} body, as some gateways do.
	FailErrorEvent FailureKind = "error_event"
	// FailStall sends Failure.AfterChunks good chunks, then nothing more
	// until the client gives up (or the server closes): a provider that
	// hangs mid-answer. Not streaming, it never answers.
	FailStall FailureKind = "stall"
)

// Failure is an injected failure. For FailStatus and FailErrorEvent,
// Message, Code and Type fill the error body, and RetryAfter, when set, is sent as "Retry-After: N"
// if it is a whole number of seconds, else as "retry-after-ms: N".
type Failure struct {
	Kind        FailureKind `json:"kind"`
	Status      int         `json:"status,omitempty"`
	Message     string      `json:"message,omitempty"`
	Code        string      `json:"code,omitempty"`
	Type        string      `json:"type,omitempty"`
	RetryAfter  Duration    `json:"retry_after,omitempty"`
	AfterChunks int         `json:"after_chunks,omitempty"`
}

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("250ms", "2s"); a bare number is read as milliseconds.
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string or a number of milliseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: want a Go duration such as \"250ms\" or \"2s\"", s)
		}
		*d = Duration(v)
		return nil
	}
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return fmt.Errorf("duration %s: want a string such as \"250ms\" or a number of milliseconds", b)
	}
	if math.Abs(ms) > float64(math.MaxInt64/int64(time.Millisecond)) {
		return fmt.Errorf("duration %s ms: out of range", b)
	}
	*d = Duration(ms * float64(time.Millisecond))
	return nil
}

// ParseScript reads a Script from JSON and validates it. Unknown fields are
// errors, so a misspelt key is reported rather than ignored.
func ParseScript(data []byte) (Script, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return Script{}, fmt.Errorf("llmtest: parse script: %w", err)
	}
	if err := s.Validate(); err != nil {
		return Script{}, err
	}
	return s, nil
}

// LoadScript reads and validates a JSON script file.
func LoadScript(path string) (Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Script{}, fmt.Errorf("llmtest: load script: %w", err)
	}
	s, err := ParseScript(data)
	if err != nil {
		return Script{}, fmt.Errorf("%w (file %s)", err, path)
	}
	return s, nil
}

// Validate reports the first problem of the script, naming where it is.
func (s Script) Validate() error {
	fallbacks := 0
	for i, a := range s.Agents {
		where := fmt.Sprintf("agents[%d]", i)
		m := a.Match
		if m.Fallback {
			fallbacks++
			if m.Kind != "" || m.Agent != "" || m.TaskContains != "" {
				return fmt.Errorf("llmtest: script: %s.match: fallback matches everything; remove kind/agent/task_contains or the fallback flag", where)
			}
		} else if m.Kind == "" && m.Agent == "" && m.TaskContains == "" {
			return fmt.Errorf("llmtest: script: %s.match: set kind, agent, task_contains or fallback", where)
		}
		for j, t := range a.Turns {
			if err := t.validate(); err != nil {
				return fmt.Errorf("llmtest: script: %s.turns[%d]: %w", where, j, err)
			}
		}
	}
	if r := s.RateLimit; r != nil && (r.RPM < 0 || r.TPM < 0) {
		return fmt.Errorf("llmtest: script: rate_limit: rpm and tpm must be 0 (no limit) or positive")
	}
	if fallbacks > 1 {
		return fmt.Errorf("llmtest: script: %d fallback scripts; keep at most one", fallbacks)
	}
	return nil
}

func (t Turn) validate() error {
	if t.Latency < 0 {
		return fmt.Errorf("latency %s is negative", time.Duration(t.Latency))
	}
	if t.Dynamic != nil {
		return nil
	}
	if t.Fail != nil {
		return t.Fail.validate()
	}
	if t.Flood != nil {
		return t.Flood.validate()
	}
	for k, c := range t.ToolCalls {
		if strings.TrimSpace(c.Name) == "" {
			return fmt.Errorf("tool_calls[%d].name is empty", k)
		}
		if len(c.Args) > 0 && !json.Valid(c.Args) {
			return fmt.Errorf("tool_calls[%d].args is not valid JSON", k)
		}
	}
	return nil
}

func (f Failure) validate() error {
	switch f.Kind {
	case FailStatus:
		if f.Status < 400 || f.Status > 599 {
			return fmt.Errorf("fail.status %d: want an HTTP error status 400-599", f.Status)
		}
	case FailMalformed, FailDrop, FailErrorEvent, FailStall:
		if f.AfterChunks < 0 {
			return fmt.Errorf("fail.after_chunks %d is negative", f.AfterChunks)
		}
	default:
		return fmt.Errorf("fail.kind %q: want %q, %q, %q, %q or %q", f.Kind, FailStatus, FailMalformed, FailDrop, FailErrorEvent, FailStall)
	}
	if f.RetryAfter < 0 {
		return fmt.Errorf("fail.retry_after %s is negative", time.Duration(f.RetryAfter))
	}
	return nil
}

// Text returns a turn that answers with text.
func Text(s string) Turn { return Turn{Text: s} }

// Call returns a turn that calls tools. Each call is a name and its
// arguments as a JSON string.
func Call(calls ...ToolCall) Turn { return Turn{ToolCalls: calls} }

// Tool returns a ToolCall of name with args (a JSON object as text).
func Tool(name, args string) ToolCall { return ToolCall{Name: name, Args: json.RawMessage(args)} }

// Status returns a failure turn answering with an HTTP error status.
func Status(status int, message string) Turn {
	return Turn{Fail: &Failure{Kind: FailStatus, Status: status, Message: message}}
}

// RateLimited returns a failure turn answering 429 with Retry-After d.
func RateLimited(d time.Duration) Turn {
	return Turn{Fail: &Failure{Kind: FailStatus, Status: 429, Message: "rate limited (scripted)",
		Code: "rate_limit_exceeded", Type: "rate_limit_error", RetryAfter: Duration(d)}}
}

// Dropped returns a failure turn that closes the connection after n chunks.
func Dropped(n int) Turn { return Turn{Fail: &Failure{Kind: FailDrop, AfterChunks: n}} }

// Stalled returns a failure turn that goes quiet after n chunks.
func Stalled(n int) Turn { return Turn{Fail: &Failure{Kind: FailStall, AfterChunks: n}} }

// Malformed returns a failure turn that sends a broken chunk after n good ones.
func Malformed(n int) Turn { return Turn{Fail: &Failure{Kind: FailMalformed, AfterChunks: n}} }
