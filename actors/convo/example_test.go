package convo_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/troupe-ai/troupe/actors/convo"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
)

// One round of an agent loop: the model's tool call, its result and the
// budget advisory that came with it.
func Example() {
	c, err := convo.New(convo.Config{Window: 1000, CharsPerToken: 4, Protected: []string{"todo"}})
	if err != nil {
		panic(err)
	}
	_ = c.AppendSystem("You are an explore agent.") // 8 + 25 chars
	_ = c.AppendTask("Where is the config loaded?") // 8 + 27 chars
	// In the loop: c.Fit(ctx, summarizer) before the request, then
	// resp := client.Complete(ctx, llm.Request{Messages: c.Messages()...}),
	// c.Calibrate(resp.Usage.PromptTokens) and c.AppendAssistant(round, resp.Message).
	_ = c.AppendAssistant(1, llm.Message{Role: llm.RoleAssistant, ToolCalls: []messages.ToolCall{
		{ID: "c1", Name: "grep", Args: json.RawMessage(`{"pattern":"LoadConfig"}`)}, // 8 + 2 + 4 + 24 chars
	}})
	adv, err := c.AppendToolResults([]convo.ToolResult{{CallID: "c1", Content: strings.Repeat("x", 2400)}}) // 8 + 2400 + 2 + 4
	if err != nil {
		panic(err)
	}
	fmt.Println(adv.Level)
	fmt.Println(adv.Text)
	fmt.Println(convo.ValidatePairs(c.Messages()) == nil)
	// Output:
	// advise
	// [Context budget: ~63% of the context window used (630/1000 tokens). Prefer targeted reads (offset/limit, grep in files mode) over whole files.]
	// true
}
