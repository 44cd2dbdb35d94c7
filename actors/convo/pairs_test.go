package convo

import (
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm"
)

func TestValidatePairs(t *testing.T) {
	t.Parallel()
	sys := llm.Message{Role: llm.RoleSystem, Content: "s"}
	user := llm.Message{Role: llm.RoleUser, Content: "u"}
	text := llm.Message{Role: llm.RoleAssistant, Content: "a"}
	asst := func(ids ...string) llm.Message {
		m := llm.Message{Role: llm.RoleAssistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, call(id, "t", `{}`))
		}
		return m
	}
	tool := func(id string) llm.Message { return llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: "r"} }
	tests := []struct {
		name    string
		msgs    []llm.Message
		wantErr string // "" = valid
	}{
		{"empty", nil, ""},
		{"plain chat", []llm.Message{sys, user, text, user, text}, ""},
		{"one call", []llm.Message{sys, user, asst("a"), tool("a"), text}, ""},
		{"parallel calls answered out of order", []llm.Message{user, asst("a", "b", "c"), tool("c"), tool("a"), tool("b"), user}, ""},
		{"consecutive groups", []llm.Message{user, asst("a"), tool("a"), asst("b", "c"), tool("b"), tool("c")}, ""},
		{"orphan tool first", []llm.Message{tool("a"), user}, "message 0: tool result \"a\" does not follow"},
		{"orphan tool after user", []llm.Message{user, asst("a"), tool("a"), user, tool("a")}, "message 4: tool result \"a\" does not follow"},
		{"orphan after text answer", []llm.Message{user, text, tool("x")}, "message 2"},
		{"answer to unknown call", []llm.Message{user, asst("a"), tool("b")}, "message 2: tool result \"b\" answers no open call of message 1"},
		{"answered twice", []llm.Message{user, asst("a", "b"), tool("a"), tool("a"), tool("b")}, "message 3: tool result \"a\" answers no open call"},
		{"missing result before user", []llm.Message{user, asst("a", "b"), tool("a"), user}, "message 3 (user): tool calls of message 1 have no result: \"b\""},
		{"missing result before assistant", []llm.Message{user, asst("a"), asst("b"), tool("b")}, "message 2 (assistant): tool calls of message 1"},
		{"missing result at end", []llm.Message{user, asst("a", "b"), tool("b")}, "end of conversation: tool calls of message 1 have no result: \"a\""},
		{"call without id", []llm.Message{user, asst("")}, "message 1: tool call 0 (t) has no id"},
		{"reused id", []llm.Message{user, asst("a"), tool("a"), asst("a"), tool("a")}, "message 3: tool call id \"a\" already used by message 1"},
		{"unknown role", []llm.Message{{Role: "robot"}}, "message 0: unknown role \"robot\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidatePairs(tt.msgs)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("ValidatePairs = %v, want valid", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("ValidatePairs accepted it, want error containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("ValidatePairs = %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}
