package llmtest_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

func TestLoadScriptFile(t *testing.T) {
	t.Parallel()
	s, err := llmtest.LoadScript("testdata/script.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Agents) != 3 {
		t.Fatalf("%d agents, want 3", len(s.Agents))
	}
	explore := s.Agents[0]
	if explore.Match.Kind != "explore" || len(explore.Turns) != 3 {
		t.Fatalf("explore script = %+v", explore)
	}
	first := explore.Turns[0]
	if len(first.ToolCalls) != 2 || first.ToolCalls[0].Name != "grep" || string(first.ToolCalls[0].Args) != `{"pattern": "func main"}` ||
		first.Reasoning != "look around first" {
		t.Errorf("turn 0 = %+v", first)
	}
	f := explore.Turns[1].Fail
	if f == nil || f.Kind != llmtest.FailStatus || f.Status != 429 || time.Duration(f.RetryAfter) != 20*time.Millisecond {
		t.Errorf("turn 1 fail = %+v", f)
	}
	last := explore.Turns[2]
	if time.Duration(last.Latency) != 5*time.Millisecond || last.Usage == nil || last.Usage.CachedTokens != 1000 {
		t.Errorf("turn 2 = %+v", last)
	}
	if !s.Agents[2].Match.Fallback || s.Agents[1].Turns[0].Fail.Kind != llmtest.FailDrop || s.Agents[1].Turns[0].Fail.AfterChunks != 2 {
		t.Errorf("agents 1/2 = %+v", s.Agents[1:])
	}

	// The loaded script plays: the explore agent gets its tool calls, then
	// the 429, then the text.
	srv := llmtest.New(s)
	defer srv.Close()
	cc, reasoning, err := stream(t, client(srv), params("find main"), as("e1", "explore")...)
	if err != nil {
		t.Fatal(err)
	}
	if len(cc.Choices[0].Message.ToolCalls) != 2 || reasoning != "look around first" {
		t.Errorf("first answer = %+v reasoning %q", cc.Choices[0].Message, reasoning)
	}
}

func TestScriptRoundTripsThroughJSON(t *testing.T) {
	t.Parallel()
	in := llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			llmtest.RateLimited(time.Second), llmtest.Call(llmtest.Tool("shell", `{"cmd":"ls"}`)),
			{Text: "ok", Latency: llmtest.Duration(1500 * time.Microsecond)}}},
	}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := llmtest.ParseScript(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	b2, _ := json.Marshal(out)
	if string(b) != string(b2) {
		t.Errorf("round trip changed the script:\n%s\n%s", b, b2)
	}
	if time.Duration(out.Agents[0].Turns[2].Latency) != 1500*time.Microsecond {
		t.Errorf("latency = %v", time.Duration(out.Agents[0].Turns[2].Latency))
	}
}

func TestParseScriptErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, json, want string
	}{
		{"unknown field", `{"agents":[{"match":{"kind":"x"},"turns":[{"txt":"hi"}]}]}`, `unknown field "txt"`},
		{"no criteria", `{"agents":[{"match":{},"turns":[]}]}`, "agents[0].match: set kind, agent, task_contains or fallback"},
		{"fallback plus kind", `{"agents":[{"match":{"fallback":true,"kind":"x"}}]}`, "agents[0].match: fallback matches everything"},
		{"two fallbacks", `{"agents":[{"match":{"fallback":true}},{"match":{"fallback":true}}]}`, "2 fallback scripts"},
		{"bad failure kind", `{"agents":[{"match":{"kind":"x"},"turns":[{"fail":{"kind":"boom"}}]}]}`, `agents[0].turns[0]: fail.kind "boom"`},
		{"bad status", `{"agents":[{"match":{"kind":"x"},"turns":[{"fail":{"kind":"status","status":200}}]}]}`, "fail.status 200"},
		{"empty tool name", `{"agents":[{"match":{"kind":"x"},"turns":[{"tool_calls":[{"name":" ","args":{}}]}]}]}`, "tool_calls[0].name is empty"},
		{"bad duration", `{"agents":[{"match":{"kind":"x"},"turns":[{"latency":"soon"}]}]}`, `duration "soon"`},
		{"negative latency", `{"agents":[{"match":{"kind":"x"},"turns":[{"latency":"-1s"}]}]}`, "latency -1s is negative"},
		{"not json", `agents:`, "parse script"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := llmtest.ParseScript([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadScriptMissingFile(t *testing.T) {
	t.Parallel()
	_, err := llmtest.LoadScript("testdata/nope.json")
	if err == nil || !strings.Contains(err.Error(), "nope.json") {
		t.Errorf("err = %v", err)
	}
}
