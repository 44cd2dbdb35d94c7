package convo

import (
	"fmt"
	"slices"
	"strings"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
)

// ValidatePairs reports the first violation of what providers require of
// tool calls in a request: every tool message answers, by ID, a call of the
// assistant message just before the run of tool messages it belongs to;
// every call of an assistant message is answered exactly once before the
// next non-tool message; call IDs are non-empty and unique; roles are known.
func ValidatePairs(msgs []llm.Message) error {
	_, err := scanPairs(msgs, false)
	return err
}

// scanPairs checks msgs like ValidatePairs. With allowPending, calls of the
// last assistant message may lack results; they are returned.
func scanPairs(msgs []llm.Message, allowPending bool) ([]messages.ToolCall, error) {
	var open []messages.ToolCall // unanswered calls of the current group
	group := -1                  // index of the assistant message of the current group
	seen := map[string]int{}     // call id -> index of the assistant message
	for i, m := range msgs {
		switch m.Role {
		case llm.RoleTool:
			if group < 0 {
				return nil, fmt.Errorf("message %d: tool result %q does not follow an assistant message with tool calls", i, m.ToolCallID)
			}
			j := slices.IndexFunc(open, func(tc messages.ToolCall) bool { return tc.ID == m.ToolCallID })
			if j < 0 {
				return nil, fmt.Errorf("message %d: tool result %q answers no open call of message %d", i, m.ToolCallID, group)
			}
			open = slices.Delete(open, j, j+1)
			continue
		case llm.RoleSystem, llm.RoleUser, llm.RoleAssistant:
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
		if len(open) > 0 {
			return nil, fmt.Errorf("message %d (%s): tool calls of message %d have no result: %s", i, m.Role, group, idList(open))
		}
		group = -1
		if m.Role != llm.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		for k, tc := range m.ToolCalls {
			if tc.ID == "" {
				return nil, fmt.Errorf("message %d: tool call %d (%s) has no id", i, k, tc.Name)
			}
			if prev, dup := seen[tc.ID]; dup {
				return nil, fmt.Errorf("message %d: tool call id %q already used by message %d", i, tc.ID, prev)
			}
			seen[tc.ID] = i
		}
		group, open = i, slices.Clone(m.ToolCalls)
	}
	if len(open) > 0 && !allowPending {
		return nil, fmt.Errorf("end of conversation: tool calls of message %d have no result: %s", group, idList(open))
	}
	return open, nil
}

func idList(calls []messages.ToolCall) string {
	ids := make([]string, len(calls))
	for i, tc := range calls {
		ids[i] = fmt.Sprintf("%q", tc.ID)
	}
	return strings.Join(ids, ", ")
}
