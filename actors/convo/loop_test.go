package convo

import (
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// TestAgentLoopWithRealClient drives the conversation the way the agent
// loop does, through the real client and the scripted server: Fit,
// Messages, Complete, Calibrate, AppendAssistant, AppendToolResults. The
// server reports prompt tokens as bytes of content and arguments / 4 + 1,
// so calibration must bring the ratio from 3.5 to about 4 (our count adds
// a little per message: ids, overhead), and every request the provider
// saw must pair its tool calls.
func TestAgentLoopWithRealClient(t *testing.T) {
	t.Parallel()
	turns := []llmtest.Turn{}
	for range 5 {
		turns = append(turns, llmtest.Call(llmtest.Tool("read_file", `{"path":"a.go"}`), llmtest.Tool("grep", `{"pattern":"Load"}`)))
	}
	turns = append(turns, llmtest.Text("The config is loaded in a.go."))
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "explore"}, Turns: turns}}})
	t.Cleanup(srv.Close)
	client := testClient(t, srv)
	s := Summarizer{Client: client, Model: "m", Agent: "a1", Kind: "explore"}

	c := newConv(t, Config{Window: 100000})
	if err := c.AppendSystem(strings.Repeat("You explore code. ", 120)); err != nil {
		t.Fatal(err)
	}
	if err := c.AppendTask("Where is the config loaded?"); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("func Load() error { return nil }\n", 100)
	var final string
	for round := 1; round <= 10; round++ {
		if _, err := c.Fit(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		resp, err := client.Complete(t.Context(), llm.Request{Model: "m", Messages: c.Messages(), Agent: "a1", Kind: "explore"}, nil)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		c.Calibrate(resp.Usage.PromptTokens)
		if err := c.AppendAssistant(round, resp.Message); err != nil {
			t.Fatal(err)
		}
		if len(resp.Message.ToolCalls) == 0 {
			final = resp.Message.Content
			break
		}
		var res []ToolResult
		for _, tc := range resp.Message.ToolCalls {
			res = append(res, ToolResult{CallID: tc.ID, Content: body})
		}
		if _, err := c.AppendToolResults(res); err != nil {
			t.Fatal(err)
		}
	}
	if final != "The config is loaded in a.go." {
		t.Fatalf("final answer %q", final)
	}
	if r := c.CharsPerToken(); r < 3.9 || r > 4.2 {
		t.Errorf("calibrated ratio %v, want about 4 (the server's chars per token)", r)
	}
	reqs := srv.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests, want 6", len(reqs))
	}
	last := reqs[len(reqs)-1]
	msgs := make([]llm.Message, len(last.Messages))
	for i, m := range last.Messages {
		msgs[i] = llm.Message{Role: llm.Role(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msgs[i].ToolCalls = append(msgs[i].ToolCalls, call(tc.ID, tc.Name, string(tc.Args)))
		}
	}
	if err := ValidatePairs(msgs); err != nil {
		t.Errorf("the provider was sent an invalid conversation: %v", err)
	}
	if len(msgs) != 2+5*3 {
		t.Errorf("last request had %d messages, want 17", len(msgs))
	}
}
