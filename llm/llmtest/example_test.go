package llmtest_test

import (
	"context"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

func ExampleParseScript() {
	s, err := llmtest.ParseScript([]byte(`{"agents": [
	  {"match": {"kind": "explore"},
	   "turns": [
	     {"tool_calls": [{"name": "grep", "args": {"pattern": "func main"}}],
	      "reasoning": "look first"},
	     {"fail": {"kind": "status", "status": 429, "retry_after": "200ms"}},
	     {"text": "main is in cmd/orchestrator", "latency": "50ms",
	      "usage": {"prompt_tokens": 1200, "completion_tokens": 40, "cached_tokens": 1000}}]},
	  {"match": {"task_contains": "README"}, "repeat": true,
	   "turns": [{"fail": {"kind": "drop", "after_chunks": 2}}, {"text": "hello"}]},
	  {"match": {"fallback": true}, "turns": [{"text": "done"}]}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range s.Agents {
		fmt.Printf("%+v: %d turns\n", a.Match, len(a.Turns))
	}
	// Output:
	// {Kind:explore Agent: TaskContains: Fallback:false}: 3 turns
	// {Kind: Agent: TaskContains:README Fallback:false}: 2 turns
	// {Kind: Agent: TaskContains: Fallback:true}: 1 turns
}

func ExampleNew() {
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Fallback: true}, Turns: []llmtest.Turn{llmtest.Text("hello from the script")}},
	}})
	defer srv.Close()
	c := openai.NewClient(option.WithBaseURL(srv.URL()), option.WithAPIKey("unused"))
	cc, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "any", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}},
		option.WithHeader(llmtest.HeaderAgent, "a1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cc.Choices[0].Message.Content)
	fmt.Println(srv.Requests()[0].Agent, srv.Requests()[0].Task)
	// Output:
	// hello from the script
	// a1 hi
}
