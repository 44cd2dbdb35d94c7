package convo

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
)

// newConv returns a conversation with cfg or fails the test.
func newConv(t testing.TB, cfg Config) *Conversation {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return c
}

// call builds a tool call with raw JSON args.
func call(id, name, args string) messages.ToolCall {
	return messages.ToolCall{ID: id, Name: name, Args: json.RawMessage(args)}
}

// addRound appends an assistant message with calls and one result per call
// (contents[i] answers calls[i]) and returns the advisory of the batch.
func addRound(t testing.TB, c *Conversation, round int, calls []messages.ToolCall, contents []string) Advisory {
	t.Helper()
	if err := c.AppendAssistant(round, llm.Message{Role: llm.RoleAssistant, ToolCalls: calls}); err != nil {
		t.Fatalf("round %d: AppendAssistant: %v", round, err)
	}
	res := make([]ToolResult, len(calls))
	for i, tc := range calls {
		res[i] = ToolResult{CallID: tc.ID, Content: contents[i]}
	}
	adv, err := c.AppendToolResults(res)
	if err != nil {
		t.Fatalf("round %d: AppendToolResults: %v", round, err)
	}
	return adv
}

// readRound appends round r as one read_file call ("call_<r>", args
// {"path":"a.go"}) whose result is n runes of 'x'. With a one-digit r the
// round is 38 chars (assistant: 8 overhead + 6 id + 9 name + 15 args) plus
// 23+n chars (tool: 8 overhead + 6 id + 9 name + n).
func readRound(t testing.TB, c *Conversation, r, n int) Advisory {
	t.Helper()
	return addRound(t, c, r, []messages.ToolCall{call(fmt.Sprintf("call_%d", r), "read_file", `{"path":"a.go"}`)},
		[]string{strings.Repeat("x", n)})
}

// msgsOf returns the messages of entries.
func msgsOf(es []Entry) []llm.Message {
	out := make([]llm.Message, len(es))
	for i, e := range es {
		out[i] = e.Message
	}
	return out
}

// assistantWith is an assistant message making calls.
func assistantWith(calls ...messages.ToolCall) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, ToolCalls: calls}
}
