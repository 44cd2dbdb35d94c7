package llmtest

import (
	"encoding/json"
	"net/http"
)

// pieces is how many chunks a text or an argument string is split into.
const pieces = 3

// chunks builds the SSE data payloads of a streamed answer, without the
// final [DONE]: the role, reasoning pieces, content pieces, each tool call
// (its header, then its arguments in pieces), the finish reason, and the
// usage chunk (choices []) when the client asked for usage.
func (a *answer) chunks() [][]byte {
	var out [][]byte
	add := func(d *wireMsg, finish *string) {
		b, _ := json.Marshal(wireCompletion{ID: a.id, Object: "chat.completion.chunk", Created: created,
			Model: a.model, Choices: []wireChoice{{Delta: d, FinishReason: finish}}})
		out = append(out, b)
	}
	empty := ""
	add(&wireMsg{Role: "assistant", Content: &empty}, nil)
	for _, p := range split(a.reasoning, pieces) {
		add(&wireMsg{ReasoningContent: p}, nil)
	}
	for _, p := range split(a.text, pieces) {
		add(&wireMsg{Content: &p}, nil)
	}
	for i, c := range a.calls {
		index := i
		add(&wireMsg{ToolCalls: []wireToolCall{{Index: &index, ID: c.ID, Type: "function",
			Function: wireFunction{Name: c.Name, Arguments: &empty}}}}, nil)
		for _, p := range split(c.arguments(), pieces) {
			add(&wireMsg{ToolCalls: []wireToolCall{{Index: &index, Function: wireFunction{Arguments: &p}}}}, nil)
		}
	}
	add(&wireMsg{}, &a.finishReasn)
	if a.sendUsage {
		b, _ := json.Marshal(wireCompletion{ID: a.id, Object: "chat.completion.chunk", Created: created,
			Model: a.model, Choices: []wireChoice{}, Usage: a.wireUsage()})
		out = append(out, b)
	}
	return out
}

// writeStream writes a streamed answer as server-sent events, flushing after
// each event, or breaks it as f says (stall waits out a stall failure).
func writeStream(w http.ResponseWriter, a answer, f *Failure, c *commit, stall func()) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	chunks := a.chunks()
	limit := len(chunks)
	if f != nil && f.AfterChunks < limit {
		limit = f.AfterChunks
	}
	buf := make([]byte, 0, 512)
	for _, ch := range chunks[:limit] {
		buf = append(append(append(buf[:0], "data: "...), ch...), "\n\n"...)
		if _, err := w.Write(buf); err != nil {
			c.gone()
			return
		}
		if err := rc.Flush(); err != nil {
			c.gone()
			return
		}
	}
	tail := "data: [DONE]\n\n"
	switch {
	case f != nil && f.Kind == FailDrop:
		c.done(false)
		hangUp(w)
		return
	case f != nil && f.Kind == FailMalformed:
		tail = "data: {\"id\":\"" + a.id + "\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\n\n" + tail
	case f != nil && f.Kind == FailStall:
		stall()
		c.gone()
		return
	case f != nil && f.Kind == FailErrorEvent:
		tail = "data: " + string(errorBody(http.StatusBadGateway, f)) + "\n\n"
	}
	c.done(true)
	if _, err := w.Write([]byte(tail)); err == nil {
		_ = rc.Flush()
	}
}
