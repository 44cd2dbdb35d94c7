package llmtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"
)

// created is the fixed "created" timestamp of every answer.
const created = 1700000000

// answer is a turn made concrete for one request: IDs, model and usage.
type answer struct {
	id          string
	model       string
	text        string
	reasoning   string
	calls       []ToolCall
	usage       Usage
	sendUsage   bool
	finishReasn string
}

func (s *Server) answer(rec *Recorded, t Turn) answer {
	a := answer{
		id:          "chatcmpl-" + strconv.Itoa(rec.Seq),
		model:       rec.Model,
		text:        t.Text,
		reasoning:   t.Reasoning,
		sendUsage:   !rec.Stream || rec.IncludeUsage,
		finishReasn: "stop",
	}
	if a.model == "" {
		a.model = "llmtest"
	}
	completion := len(t.Text) + len(t.Reasoning)
	if len(t.ToolCalls) > 0 {
		a.finishReasn = "tool_calls"
		a.calls = make([]ToolCall, len(t.ToolCalls))
		for i, c := range t.ToolCalls {
			if c.ID == "" {
				c.ID = "call_" + strconv.FormatInt(s.callSeq.Add(1), 10)
			}
			a.calls[i] = c
			completion += len(c.Name) + len(c.arguments())
		}
	}
	if t.Usage != nil {
		a.usage = *t.Usage
	} else {
		a.usage = Usage{PromptTokens: tokens(rec.chars()), CompletionTokens: tokens(completion)}
	}
	return a
}

// tokens estimates tokens from characters: about four per token, at least 1.
func tokens(chars int) int { return chars/4 + 1 }

// wireUsage is usage on the wire.
type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (a *answer) wireUsage() *wireUsage {
	u := &wireUsage{PromptTokens: a.usage.PromptTokens, CompletionTokens: a.usage.CompletionTokens,
		TotalTokens: a.usage.PromptTokens + a.usage.CompletionTokens}
	u.PromptTokensDetails.CachedTokens = a.usage.CachedTokens
	return u
}

type wireFunction struct {
	Name      string  `json:"name,omitempty"`
	Arguments *string `json:"arguments,omitempty"`
}

type wireToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function wireFunction `json:"function"`
}

type wireMsg struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
}

type wireChoice struct {
	Index        int      `json:"index"`
	Message      *wireMsg `json:"message,omitempty"`
	Delta        *wireMsg `json:"delta,omitempty"`
	FinishReason *string  `json:"finish_reason"`
}

type wireCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []wireChoice `json:"choices"`
	Usage   *wireUsage   `json:"usage,omitempty"`
}

// writeCompletion writes a non-streaming answer, or the failure f.
func writeCompletion(w http.ResponseWriter, a answer, f *Failure, c *commit) {
	msg := &wireMsg{Role: "assistant", ReasoningContent: a.reasoning}
	if a.text != "" || len(a.calls) == 0 {
		msg.Content = &a.text
	}
	for _, tc := range a.calls {
		args := tc.arguments()
		msg.ToolCalls = append(msg.ToolCalls, wireToolCall{ID: tc.ID, Type: "function",
			Function: wireFunction{Name: tc.Name, Arguments: &args}})
	}
	body, _ := json.Marshal(wireCompletion{ID: a.id, Object: "chat.completion", Created: created, Model: a.model,
		Choices: []wireChoice{{Message: msg, FinishReason: &a.finishReasn}}, Usage: a.wireUsage()})
	if f != nil && f.Kind == FailDrop {
		c.done(false)
		hangUp(w)
		return
	}
	if f != nil && f.Kind == FailMalformed {
		body = body[:len(body)/2]
	}
	if f != nil && f.Kind == FailErrorEvent {
		body = errorBody(http.StatusBadGateway, f)
	}
	w.Header().Set("Content-Type", "application/json")
	c.done(true)
	_, _ = w.Write(body)
}

// writeError writes an OpenAI-style error with f's status and fields.
func writeError(w http.ResponseWriter, status int, f *Failure) {
	body := errorBody(status, f)
	if f.RetryAfter > 0 {
		d := time.Duration(f.RetryAfter)
		if d%time.Second == 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(int64(d/time.Second), 10))
		} else {
			w.Header().Set("Retry-After-Ms", strconv.FormatInt(d.Milliseconds(), 10))
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// errorBody is OpenAI's {"error": {...}} for f; status picks the defaults.
func errorBody(status int, f *Failure) []byte {
	typ := f.Type
	if typ == "" {
		typ = errorType(status)
	}
	msg := f.Message
	if msg == "" {
		msg = http.StatusText(status) + " (scripted)"
	}
	var code any
	if f.Code != "" {
		code = f.Code
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": code}})
	return body
}

func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

// hangUp closes the connection under w without ending the answer.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// HTTP/2 or a writer that cannot be hijacked: abort the handler,
		// which resets the stream without ending the body.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// split cuts s into up to n pieces on rune boundaries (one piece when short).
func split(s string, n int) []string {
	if s == "" {
		return nil
	}
	runes := utf8.RuneCountInString(s)
	if runes < n {
		n = runes
	}
	size := runes / n
	out := make([]string, 0, n)
	start, count := 0, 0
	for i := range s {
		if count > 0 && count%size == 0 && len(out) < n-1 {
			out = append(out, s[start:i])
			start = i
		}
		count++
	}
	return append(out, s[start:])
}
