package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/troupe-ai/troupe/internal/text"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/tidwall/gjson"
)

// assembledCall is one tool call put together from stream deltas.
type assembledCall struct {
	id, name string
	args     string
	index    int64
	buf      []byte // the arguments while they stream in (appended: linear time)
}

// assembler puts a streamed answer together. It is our own rather than
// openai-go's ChatCompletionAccumulator because that one silently rejects
// chunks whose id differs from the first (which some OpenAI-compatible
// servers send) and tracks much we do not need. Tool calls are merged by
// their index; a delta with a new id at a used index starts a new call
// (servers that omit the index send every call at index 0). Calls are
// read only after the stream ends, never from partial state.
type assembler struct {
	content   strings.Builder
	reasoning strings.Builder
	calls     []*assembledCall
	byIndex   map[int64]*assembledCall
	finish    string
	model     string
	usage     *openai.CompletionUsage
	caps      caps
	err       error // the first cap passed: the answer is refused
}

// add folds one chunk in and returns its text fragments.
func (a *assembler) add(ch *openai.ChatCompletionChunk) Delta {
	if ch.Model != "" {
		a.model = ch.Model
	}
	if ch.JSON.Usage.Valid() {
		u := ch.Usage
		a.usage = &u
	}
	var d Delta
	for i := range ch.Choices {
		c := &ch.Choices[i]
		if c.Index != 0 { // we ask for one choice; ignore any other
			continue
		}
		if c.FinishReason != "" {
			a.finish = c.FinishReason
		}
		d.Content += c.Delta.Content
		d.Reasoning += reasoningOf(c.Delta.RawJSON())
		for _, tc := range c.Delta.ToolCalls {
			a.addCall(tc)
		}
	}
	if a.caps.overBytes(a.caps.text, a.content.Len()+a.reasoning.Len()+len(d.Content)+len(d.Reasoning)) {
		a.fail(a.caps.overText())
		return Delta{}
	}
	a.content.WriteString(d.Content)
	a.reasoning.WriteString(d.Reasoning)
	return d
}

func (a *assembler) addCall(tc openai.ChatCompletionChunkChoiceDeltaToolCall) {
	if a.byIndex == nil {
		a.byIndex = make(map[int64]*assembledCall)
	}
	call := a.byIndex[tc.Index]
	if call == nil || (tc.ID != "" && call.id != "" && tc.ID != call.id) {
		if a.caps.toolCalls > 0 && len(a.calls) >= a.caps.toolCalls {
			a.fail(a.caps.overToolCalls())
			return
		}
		call = &assembledCall{index: tc.Index}
		a.byIndex[tc.Index] = call
		a.calls = append(a.calls, call)
	}
	if call.id == "" {
		call.id = tc.ID
	}
	if call.name == "" {
		call.name = tc.Function.Name
	}
	if a.caps.overBytes(a.caps.toolCall, len(call.buf)+len(tc.Function.Arguments)) {
		a.fail(a.caps.overToolCall())
		return
	}
	call.buf = append(call.buf, tc.Function.Arguments...)
}

// fail records the first cap passed.
func (a *assembler) fail(err error) {
	if a.err == nil {
		a.err = err
	}
}

// finishedCalls returns the calls ordered by index (calls sharing an index
// in order of arrival), dropping fragments that never got a name (nothing
// could run them).
func (a *assembler) finishedCalls() []assembledCall {
	slices.SortStableFunc(a.calls, func(x, y *assembledCall) int { return cmp.Compare(x.index, y.index) })
	out := make([]assembledCall, 0, len(a.calls))
	for i, c := range a.calls {
		if c.name == "" {
			continue
		}
		if c.id == "" {
			c.id = fmt.Sprintf("call_%d", i) // some local servers send none
		}
		c.args, c.buf = string(c.buf), nil
		out = append(out, *c)
	}
	return out
}

// streamOnce makes one streaming attempt. emitted reports whether onDelta
// was given anything (so a retry must tell it to start over).
func (c *OpenAIClient) streamOnce(ctx context.Context, p openai.ChatCompletionNewParams, opts []option.RequestOption,
	x *exchange, onDelta func(Delta)) (resp Response, emitted bool, err error) {
	s := c.chat.NewStreaming(ctx, p, opts...)
	defer s.Close()
	a := assembler{caps: x.caps}
	chunks := 0
	for s.Next() {
		chunks++
		ch := s.Current()
		d := a.add(&ch)
		if a.err != nil {
			// Refused: stop reading (Close drops the connection), so
			// what the server still sends never reaches memory.
			return resp, emitted, a.err
		}
		if onDelta != nil && (d.Content != "" || d.Reasoning != "") {
			onDelta(d)
			emitted = true
		}
	}
	if x.watch != nil && x.watch.over != nil {
		return resp, emitted, x.watch.over
	}
	if err := s.Err(); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		var event *ssestream.StreamError
		switch {
		case errors.As(err, &syn) || errors.As(err, &typ):
			return resp, emitted, transient(fmt.Errorf("%w: %v", ErrMalformedChunk, err))
		case errors.As(err, &event):
			return resp, emitted, err // the provider's error event; classify reports it
		case x.watch != nil && ctx.Err() == nil:
			// The stream had begun: the body broke off (unexpected EOF,
			// connection reset).
			return resp, emitted, transient(fmt.Errorf("%w: %v", ErrStreamIncomplete, err))
		default:
			return resp, emitted, err
		}
	}
	// A stream without [DONE] is cut, unless the server ended the body
	// cleanly after a finish reason (a few local servers omit [DONE]).
	if x.watch == nil || !x.watch.done && !(a.finish != "" && x.watch.eof) {
		if chunks == 0 && x.watch != nil && x.watch.eof && !isEventStream(x.header) {
			return resp, emitted, fmt.Errorf("%w: it answered a streaming request with %q; set streaming off for this provider",
				ErrNotEventStream, x.header.Get("Content-Type"))
		}
		return resp, emitted, transient(ErrStreamIncomplete)
	}
	resp.Message = Message{Role: RoleAssistant, Content: a.content.String(), Reasoning: a.reasoning.String(),
		ToolCalls: toolCalls(a.finishedCalls())}
	resp.FinishReason = a.finish
	resp.Model = a.model
	if a.usage != nil {
		resp.Usage = usageOf(*a.usage)
	}
	return resp, emitted, nil
}

// isEventStream reports a text/event-stream content type.
func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// completeOnce makes one non-streaming attempt.
func (c *OpenAIClient) completeOnce(ctx context.Context, p openai.ChatCompletionNewParams, opts []option.RequestOption, caps caps) (Response, error) {
	cc, err := c.chat.New(ctx, p, opts...)
	if err != nil {
		return Response{}, err
	}
	if len(cc.Choices) == 0 {
		// Some gateways answer 200 with {"error": {...}} when upstream fails.
		if msg := gjson.Get(cc.RawJSON(), "error.message"); msg.Exists() {
			return Response{}, transient(fmt.Errorf("%w: provider error: %s", ErrEmptyResponse, c.secret.String(text.Clip(msg.String(), 300))))
		}
		return Response{}, transient(ErrEmptyResponse)
	}
	choice := cc.Choices[0]
	if err := checkWhole(caps, choice.Message); err != nil {
		return Response{}, err
	}
	calls := make([]assembledCall, 0, len(choice.Message.ToolCalls))
	for i, tc := range choice.Message.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		calls = append(calls, assembledCall{id: id, name: tc.Function.Name, args: tc.Function.Arguments})
	}
	return Response{
		Message: Message{Role: RoleAssistant, Content: choice.Message.Content,
			Reasoning: reasoningOf(choice.Message.RawJSON()), ToolCalls: toolCalls(calls)},
		Usage:        usageOf(cc.Usage),
		FinishReason: choice.FinishReason,
		Model:        cc.Model,
	}, nil
}

// checkWhole holds a non-streamed answer to the caps a stream is read
// under (its body was already cut at caps.body()).
func checkWhole(c caps, m openai.ChatCompletionMessage) error {
	if c.overBytes(c.text, len(m.Content)+len(reasoningOf(m.RawJSON()))) {
		return c.overText()
	}
	if c.toolCalls > 0 && len(m.ToolCalls) > c.toolCalls {
		return c.overToolCalls()
	}
	for _, tc := range m.ToolCalls {
		if c.overBytes(c.toolCall, len(tc.Function.Arguments)) {
			return c.overToolCall()
		}
	}
	return nil
}
