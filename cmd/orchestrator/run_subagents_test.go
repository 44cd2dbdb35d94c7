package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// A root that finishes over sub-agents that failed: run --json counts 3
// failed of 4 sub-agents with the first failure's reason, the summary
// says the same, and the exit code is 4, not 0.
func TestRunCountsFailedSubAgents(t *testing.T) {
	code, out, errs := runCmd(t, t.Context(), testEnv(threeOfFourFail(t), t.TempDir()), false, "--workspace", t.TempDir(), "--json", "find main")
	var res struct {
		Status    string `json:"status"`
		SubAgents struct {
			Completed, Failed, Cancelled int
			FirstFailure                 string `json:"first_failure"`
		} `json:"sub_agents"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("exit %d: %v\n%s\n%s", code, err, out, errs)
	}
	s := res.SubAgents
	if code != exitSubFailed || res.Status != "completed" || s.Completed != 1 || s.Failed != 3 || s.Cancelled != 0 ||
		!strings.Contains(s.FirstFailure, "context too long for this model") || !strings.HasPrefix(s.FirstFailure, "explore-") {
		t.Fatalf("exit %d, %+v\n%s", code, res, errs)
	}
	// The text summary says the same.
	code, _, errs = runCmd(t, t.Context(), testEnv(threeOfFourFail(t), t.TempDir()), false, "--workspace", t.TempDir(), "find main")
	if code != exitSubFailed || !strings.Contains(errs, "sub-agents: 1 completed · 3 failed · 0 cancelled") ||
		!strings.Contains(errs, "first failure: explore-") {
		t.Errorf("exit %d\n%s", code, errs)
	}
}

// threeOfFourFail is a model whose root delegates four explore agents, of
// which three fail on a provider error, and then answers.
func threeOfFourFail(t *testing.T) *llmtest.Server {
	var calls []llmtest.ToolCall
	for i := range 4 {
		task := fmt.Sprintf("doomed question %d: where is main?", i)
		if i == 0 {
			task = "lucky question: where is main?"
		}
		args, _ := json.Marshal(map[string]string{"type": "explore", "task": task})
		calls = append(calls, llmtest.ToolCall{Name: "delegate", Args: args})
	}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{{ToolCalls: calls}, {Text: "one answer of four"}}},
		{Match: llmtest.Matcher{Kind: "explore", TaskContains: "doomed"}, Repeat: true, Turns: []llmtest.Turn{
			{Fail: &llmtest.Failure{Kind: llmtest.FailStatus, Status: 400, Message: "context too long for this model"}}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{{Text: "main.go:3"}}},
	}})
	t.Cleanup(srv.Close)
	return srv
}

// A run whose sub-agents all completed exits 0 and counts them.
func TestRunCountsCompletedSubAgents(t *testing.T) {
	args, _ := json.Marshal(map[string]string{"type": "explore", "task": "where is main?"})
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: args}}}, {Text: "main is in main.go"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{{Text: "main.go:3"}}},
	}})
	t.Cleanup(srv.Close)
	code, out, errs := runCmd(t, t.Context(), testEnv(srv, t.TempDir()), false, "--workspace", t.TempDir(), "--json", "find main")
	if code != exitOK || !strings.Contains(out, `"sub_agents": {`) || !strings.Contains(out, `"completed": 1,`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}
