package llmtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// client returns an openai-go client for srv with the SDK's retries off, so
// every failure the server injects reaches the test.
func client(srv *llmtest.Server) *openai.Client {
	c := openai.NewClient(option.WithBaseURL(srv.URL()), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
	return &c
}

func params(task string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model: "m1",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are terse."), openai.UserMessage(task)},
	}
}

func as(agent, kind string) []option.RequestOption {
	return []option.RequestOption{option.WithHeader(llmtest.HeaderAgent, agent),
		option.WithHeader(llmtest.HeaderKind, kind), option.WithHeader(llmtest.HeaderRun, "run-1")}
}

// stream runs one streaming call and returns the accumulated completion and
// the reasoning fragments read from the raw deltas.
func stream(t *testing.T, c *openai.Client, p openai.ChatCompletionNewParams, opts ...option.RequestOption) (openai.ChatCompletion, string, error) {
	t.Helper()
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := c.Chat.Completions.NewStreaming(t.Context(), p, opts...)
	defer s.Close()
	var acc openai.ChatCompletionAccumulator
	var reasoning strings.Builder
	for s.Next() {
		ch := s.Current()
		acc.AddChunk(ch)
		if len(ch.Choices) > 0 {
			reasoning.WriteString(gjson.Get(ch.Choices[0].Delta.RawJSON(), "reasoning_content").String())
		}
	}
	return acc.ChatCompletion, reasoning.String(), s.Err()
}

func TestStreamingText(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Fallback: true}, Turns: []llmtest.Turn{{Text: "héllo wörld, streamed", Reasoning: "think first"}}},
	}})
	defer srv.Close()
	cc, reasoning, err := stream(t, client(srv), params("say hi"), as("a1", "root")...)
	if err != nil {
		t.Fatal(err)
	}
	if got := cc.Choices[0].Message.Content; got != "héllo wörld, streamed" {
		t.Errorf("content = %q", got)
	}
	if reasoning != "think first" {
		t.Errorf("reasoning = %q", reasoning)
	}
	if cc.Choices[0].FinishReason != "stop" {
		t.Errorf("finish_reason = %q", cc.Choices[0].FinishReason)
	}
	// Usage is estimated from characters: the two messages have 14+6 chars
	// (20/4+1 = 6 tokens); the answer 23 bytes + 11 bytes of reasoning (33/4+1 = 9).
	if cc.Usage.PromptTokens != 6 || cc.Usage.CompletionTokens != 9 {
		t.Errorf("usage = %d/%d, want 6/9", cc.Usage.PromptTokens, cc.Usage.CompletionTokens)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests recorded, want 1", len(reqs))
	}
	r := reqs[0]
	if !r.Stream || !r.IncludeUsage || r.Model != "m1" || r.Agent != "a1" || r.Kind != "root" || r.Run != "run-1" {
		t.Errorf("recorded %+v", r)
	}
	if r.Task != "say hi" || len(r.Messages) != 2 || r.Messages[0].Role != "system" || r.Round != 1 || r.Script != 0 {
		t.Errorf("recorded task %q messages %+v round %d script %d", r.Task, r.Messages, r.Round, r.Script)
	}
	if r.Answered.Before(r.Received) {
		t.Errorf("answered %v before received %v", r.Answered, r.Received)
	}
	if r.Header.Get("Authorization") != "Bearer test-key" {
		t.Errorf("authorization header not recorded")
	}
}

func TestNonStreamingText(t *testing.T) {
	t.Parallel()
	usage := &llmtest.Usage{PromptTokens: 100, CompletionTokens: 7, CachedTokens: 40}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{{Text: "found it", Reasoning: "r", Usage: usage}}},
	}})
	defer srv.Close()
	cc, err := client(srv).Chat.Completions.New(t.Context(), params("where?"), as("e1", "explore")...)
	if err != nil {
		t.Fatal(err)
	}
	m := cc.Choices[0].Message
	if m.Content != "found it" || gjson.Get(m.RawJSON(), "reasoning_content").String() != "r" {
		t.Errorf("message = %s", m.RawJSON())
	}
	if cc.Usage.PromptTokens != 100 || cc.Usage.CompletionTokens != 7 || cc.Usage.PromptTokensDetails.CachedTokens != 40 {
		t.Errorf("usage = %s", cc.Usage.RawJSON())
	}
	if r := srv.Requests()[0]; r.Stream {
		t.Errorf("recorded stream=true for a non-streaming call")
	}
}

func TestToolCallsSplitAcrossChunks(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Fallback: true}, Turns: []llmtest.Turn{
			llmtest.Call(llmtest.Tool("grep", `{"pattern":"func main","path":"cmd"}`), llmtest.Tool("read_file", `{"path":"go.mod"}`)),
			llmtest.Call(llmtest.Tool("think", `{"thought":"again"}`)),
		}},
	}})
	defer srv.Close()
	p := params("find main")
	p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
		Name: "grep", Parameters: openai.FunctionParameters{"type": "object"}})}
	cc, _, err := stream(t, client(srv), p, as("a1", "root")...)
	if err != nil {
		t.Fatal(err)
	}
	calls := cc.Choices[0].Message.ToolCalls
	if len(calls) != 2 || cc.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("tool calls = %+v, finish %q", calls, cc.Choices[0].FinishReason)
	}
	if calls[0].Function.Name != "grep" || calls[0].Function.Arguments != `{"pattern":"func main","path":"cmd"}` ||
		calls[1].Function.Name != "read_file" || calls[1].Function.Arguments != `{"path":"go.mod"}` {
		t.Errorf("calls = %+v", calls)
	}
	if calls[0].ID == "" || calls[0].ID == calls[1].ID {
		t.Errorf("tool call IDs not unique: %q %q", calls[0].ID, calls[1].ID)
	}
	if got := srv.Requests()[0].Tools; len(got) != 1 || got[0] != "grep" {
		t.Errorf("recorded tools = %v", got)
	}

	// The raw stream splits each call's arguments over several chunks, and
	// only the first delta of a call carries its id and name.
	body := rawStream(t, srv, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	var argChunks, headers int
	for _, line := range strings.Split(body, "\n\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		for _, tc := range gjson.Get(data, "choices.0.delta.tool_calls").Array() {
			if tc.Get("id").Exists() {
				headers++
				if tc.Get("function.arguments").String() != "" {
					t.Errorf("header chunk carries arguments: %s", data)
				}
			} else {
				argChunks++
			}
		}
	}
	// The raw request has no agent header, so it is a new agent starting the
	// script from its first entry: two calls, each argument string in 3 pieces.
	if headers != 2 || argChunks != 6 {
		t.Errorf("headers=%d argument chunks=%d, want 2 and 6; body:\n%s", headers, argChunks, body)
	}
}

// rawStream posts body with plain net/http and returns the SSE text.
func rawStream(t *testing.T, srv *llmtest.Server, body string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL()+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	if !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
		t.Errorf("stream does not end with [DONE]: %q", b)
	}
	return string(b)
}

func TestConcurrentAgents(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{
			llmtest.Call(llmtest.Tool("grep", `{"pattern":"x"}`)), llmtest.Text("done")}},
	}})
	defer srv.Close()
	c := client(srv)
	const agents = 100
	var wg sync.WaitGroup
	errs := make(chan error, agents)
	for i := range agents {
		wg.Go(func() {
			id := fmt.Sprintf("e%d", i)
			cc, _, err := stream(t, c, params("go"), as(id, "explore")...)
			if err == nil && len(cc.Choices[0].Message.ToolCalls) != 1 {
				err = fmt.Errorf("%s round 1: no tool call", id)
			}
			if err == nil {
				cc, _, err = stream(t, c, params("go"), as(id, "explore")...)
			}
			if err == nil && cc.Choices[0].Message.Content != "done" {
				err = fmt.Errorf("%s round 2: %q", id, cc.Choices[0].Message.Content)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 2*agents {
		t.Fatalf("%d requests recorded, want %d", len(reqs), 2*agents)
	}
	ids := map[string]bool{}
	for i, r := range reqs {
		if r.Seq != i+1 {
			t.Fatalf("request %d has seq %d", i, r.Seq)
		}
		for _, tc := range r.Reply.ToolCalls {
			if ids[tc.ID] {
				t.Errorf("tool call ID %q generated twice", tc.ID)
			}
			ids[tc.ID] = true
		}
	}
	if len(ids) != agents {
		t.Errorf("%d distinct tool call IDs, want %d", len(ids), agents)
	}
}

func TestContentPartsAndModels(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{TaskContains: "two parts"},
		Turns: []llmtest.Turn{llmtest.Text("matched")}}}})
	defer srv.Close()
	c := client(srv)
	p := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("in two "), openai.TextContentPart("parts")})}}
	cc, err := c.Chat.Completions.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if cc.Choices[0].Message.Content != "matched" || srv.Requests()[0].Task != "in two parts" {
		t.Errorf("content parts: answer %q task %q", cc.Choices[0].Message.Content, srv.Requests()[0].Task)
	}
	page, err := c.Models.List(t.Context())
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != "llmtest" {
		t.Errorf("models: %+v, %v", page, err)
	}
	res, err := http.Get(srv.URL() + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: status %d", res.StatusCode)
	}
}

func TestBadRequestBody(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Script{})
	defer srv.Close()
	res, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(`{"messages":"nope"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Error struct{ Message string } `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(body.Error.Message, "not a Chat Completions request") {
		t.Errorf("status %d message %q", res.StatusCode, body.Error.Message)
	}
	if r := srv.Requests(); len(r) != 1 || r[0].Err == "" {
		t.Errorf("bad request not recorded with its error: %+v", r)
	}
}

func TestCloseEndsLatencyWait(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Fallback: true}, Turns: []llmtest.Turn{{Text: "late", Latency: llmtest.Duration(time.Hour)}}},
	}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := client(srv).Chat.Completions.New(ctx, params("t"))
		done <- err
	}()
	waitFor(t, func() bool { return srv.InFlight() == 1 })
	srv.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("call succeeded on a closed server")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("call still blocked 10s after Close")
	}
}

// waitFor polls cond every few milliseconds for up to 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		<-time.After(2 * time.Millisecond)
	}
}
