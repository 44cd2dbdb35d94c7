package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// newClient returns a streaming client for srv with fast backoff; edit
// changes the config first.
func newClient(t testing.TB, srv *llmtest.Server, edit func(*llm.Config)) *llm.OpenAIClient {
	t.Helper()
	cfg := llm.DefaultConfig()
	cfg.BaseURL = srv.URL()
	cfg.APIKey = "sk-test-0123456789"
	cfg.Model = "m-default"
	cfg.InitialBackoff = time.Millisecond
	cfg.MaxBackoff = 5 * time.Millisecond
	if edit != nil {
		edit(&cfg)
	}
	c, err := llm.NewClient(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func script(turns ...llmtest.Turn) llmtest.Script {
	return llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Fallback: true}, Turns: turns}}}
}

func request(task string) llm.Request {
	return llm.Request{
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: "You are terse."}, {Role: llm.RoleUser, Content: task}},
		Agent:    "agent-1", Run: "run-1", Kind: "root",
	}
}

// deltas collects streamed fragments; it is safe for concurrent use.
type deltas struct {
	mu  sync.Mutex
	all []llm.Delta
}

func (d *deltas) add(x llm.Delta) {
	d.mu.Lock()
	d.all = append(d.all, x)
	d.mu.Unlock()
}

// since returns the content and reasoning after the last reset marker, and
// the number of reset markers.
func (d *deltas) since() (content, reasoning string, resets int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var c, r strings.Builder
	for _, x := range d.all {
		if x == (llm.Delta{}) {
			resets++
			c.Reset()
			r.Reset()
			continue
		}
		c.WriteString(x.Content)
		r.WriteString(x.Reasoning)
	}
	return c.String(), r.String(), resets
}

func TestStreamingText(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(script(llmtest.Turn{Text: "The answer is 42.", Reasoning: "Six times seven.",
		Usage: &llmtest.Usage{PromptTokens: 2_000_000, CompletionTokens: 1_000_000, CachedTokens: 1_000_000}}))
	defer srv.Close()
	c := newClient(t, srv, func(cfg *llm.Config) {
		cfg.Pricing = llm.Pricing{"m-default": {Input: 2, CachedInput: 0.5, Output: 8}}
	})
	var d deltas
	resp, err := c.Complete(t.Context(), request("question"), d.add)
	if err != nil {
		t.Fatal(err)
	}
	m := resp.Message
	if m.Role != llm.RoleAssistant || m.Content != "The answer is 42." || m.Reasoning != "Six times seven." || len(m.ToolCalls) != 0 {
		t.Errorf("message = %+v", m)
	}
	if content, reasoning, resets := d.since(); content != m.Content || reasoning != m.Reasoning || resets != 0 {
		t.Errorf("deltas gave %q / %q with %d resets", content, reasoning, resets)
	}
	if resp.Attempts != 1 || resp.FinishReason != "stop" || resp.Model != "m-default" {
		t.Errorf("attempts %d finish %q model %q", resp.Attempts, resp.FinishReason, resp.Model)
	}
	if resp.Usage != (llm.Usage{PromptTokens: 2_000_000, CompletionTokens: 1_000_000, CachedTokens: 1_000_000}) {
		t.Errorf("usage = %+v", resp.Usage)
	}
	// 1M uncached prompt tokens at $2 + 1M cached at $0.5 + 1M output at $8.
	if resp.Cost != 10.5 {
		t.Errorf("cost = %v, want 10.5", resp.Cost)
	}
	r := srv.Requests()[0]
	if !r.Stream || !r.IncludeUsage || r.Model != "m-default" || r.Agent != "agent-1" || r.Run != "run-1" || r.Kind != "root" {
		t.Errorf("recorded request: stream %v usage %v model %q agent %q run %q kind %q",
			r.Stream, r.IncludeUsage, r.Model, r.Agent, r.Run, r.Kind)
	}
	if r.ParallelToolCalls != nil || len(r.Tools) != 0 {
		t.Errorf("parallel_tool_calls sent without tools")
	}
	if r.Header.Get("Authorization") != "Bearer sk-test-0123456789" {
		t.Errorf("authorization = %q", r.Header.Get("Authorization"))
	}
}

func TestNonStreaming(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(script(llmtest.Turn{Text: "plain", Reasoning: "hm", Usage: &llmtest.Usage{PromptTokens: 10, CompletionTokens: 2, CachedTokens: 4}}))
	defer srv.Close()
	c := newClient(t, srv, func(cfg *llm.Config) { cfg.Stream = false })
	var d deltas
	req := request("q")
	req.Model = "m-other"
	req.MaxTokens = 256
	resp, err := c.Complete(t.Context(), req, d.add)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "plain" || resp.Message.Reasoning != "hm" || resp.Usage.CachedTokens != 4 || resp.Model != "m-other" {
		t.Errorf("resp = %+v", resp)
	}
	if len(d.all) != 1 || d.all[0] != (llm.Delta{Content: "plain", Reasoning: "hm"}) {
		t.Errorf("non-streaming call gave deltas %+v, want the whole answer once", d.all)
	}
	r := srv.Requests()[0]
	if r.Stream || r.IncludeUsage || r.Model != "m-other" || r.MaxTokens != 256 {
		t.Errorf("recorded stream %v include_usage %v model %q max_tokens %d", r.Stream, r.IncludeUsage, r.Model, r.MaxTokens)
	}
	if !strings.Contains(string(r.Body), `"max_tokens":256`) {
		t.Errorf("a non-OpenAI base URL must get max_tokens: %s", r.Body)
	}
}

// redirect is a transport that sends every request to srv, whatever host
// it names, so a client configured for a public API talks to the script.
type redirect struct{ host string }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = "http", r.host
	return http.DefaultTransport.RoundTrip(req)
}

func TestOpenAIHostGetsMaxCompletionTokens(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(script(llmtest.Text("ok")))
	defer srv.Close()
	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, srv, func(cfg *llm.Config) {
		cfg.BaseURL = "https://api.openai.com/v1"
		cfg.HTTPClient = &http.Client{Transport: redirect{host: u.Host}}
	})
	req := request("q")
	req.MaxTokens = 100
	if _, err := c.Complete(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if !strings.Contains(string(r.Body), `"max_completion_tokens":100`) || strings.Contains(string(r.Body), `"max_tokens"`) {
		t.Errorf("OpenAI's API must get max_completion_tokens only: %s", r.Body)
	}
}

func TestParallelToolCallsAndHistory(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{true, false} {
		t.Run(map[bool]string{true: "stream", false: "plain"}[stream], func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(script(
				llmtest.Call(llmtest.Tool("grep", `{"pattern":"func main","path":"cmd/ünï"}`), llmtest.Tool("read_file", `{"path":"go.mod"}`)),
				llmtest.Text("done")))
			defer srv.Close()
			c := newClient(t, srv, func(cfg *llm.Config) { cfg.Stream = stream })
			req := request("find main")
			req.Tools = []messages.ToolSpec{
				{Name: "grep", Description: "search", Parameters: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"}}}`)},
				{Name: "read_file", Description: "read"},
			}
			resp, err := c.Complete(t.Context(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			calls := resp.Message.ToolCalls
			if len(calls) != 2 || resp.FinishReason != "tool_calls" {
				t.Fatalf("calls = %+v finish %q", calls, resp.FinishReason)
			}
			if calls[0].Name != "grep" || string(calls[0].Args) != `{"pattern":"func main","path":"cmd/ünï"}` ||
				calls[1].Name != "read_file" || string(calls[1].Args) != `{"path":"go.mod"}` || calls[0].ID == calls[1].ID {
				t.Errorf("calls = %+v", calls)
			}
			r := srv.Requests()[0]
			if r.ParallelToolCalls == nil || !*r.ParallelToolCalls || strings.Join(r.Tools, ",") != "grep,read_file" {
				t.Errorf("parallel_tool_calls %v tools %v", r.ParallelToolCalls, r.Tools)
			}

			// The answer and its results go back: an assistant message
			// with both calls, then one tool message per call (one empty).
			req.Messages = append(req.Messages, resp.Message,
				llm.Message{Role: llm.RoleTool, ToolCallID: calls[0].ID, Name: "grep", Content: "cmd/main.go"},
				llm.Message{Role: llm.RoleTool, ToolCallID: calls[1].ID, Name: "read_file"})
			if _, err := c.Complete(t.Context(), req, nil); err != nil {
				t.Fatal(err)
			}
			sent := srv.Requests()[1].Messages
			if len(sent) != 5 {
				t.Fatalf("%d messages sent, want 5", len(sent))
			}
			a := sent[2]
			if a.Role != "assistant" || len(a.ToolCalls) != 2 || a.ToolCalls[0].ID != calls[0].ID ||
				a.ToolCalls[1].Name != "read_file" || string(a.ToolCalls[0].Args) != string(calls[0].Args) {
				t.Errorf("assistant message sent as %+v", a)
			}
			if sent[3].Role != "tool" || sent[3].ToolCallID != calls[0].ID || sent[3].Content != "cmd/main.go" {
				t.Errorf("tool message 1 sent as %+v", sent[3])
			}
			if sent[4].ToolCallID != calls[1].ID || !sent[4].ContentPresent || sent[4].Content != llm.EmptyToolResult {
				t.Errorf("empty tool message sent as %+v", sent[4])
			}
		})
	}
}

func TestBrokenArgumentsKeptAsText(t *testing.T) {
	t.Parallel()
	const broken = `{"pattern": "x"`
	srv := llmtest.New(script(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "grep", RawArgs: broken}, {Name: "think", RawArgs: `["ok"]`}, {Name: "list_dir"}}},
		llmtest.Text("ok")))
	defer srv.Close()
	c := newClient(t, srv, nil)
	req := request("q")
	resp, err := c.Complete(t.Context(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls
	// Broken JSON is kept verbatim inside a JSON string, valid JSON as is,
	// and no arguments at all become {}.
	if len(calls) != 3 || string(calls[0].Args) != `"{\"pattern\": \"x\""` || string(calls[1].Args) != `["ok"]` || string(calls[2].Args) != `{}` {
		t.Fatalf("calls = %+v", calls)
	}
	if _, err := json.Marshal(resp.Message); err != nil {
		t.Errorf("message with broken arguments does not marshal: %v", err)
	}
	req.Messages = append(req.Messages, resp.Message,
		llm.Message{Role: llm.RoleTool, ToolCallID: calls[0].ID, Content: "error: arguments are not JSON"},
		llm.Message{Role: llm.RoleTool, ToolCallID: calls[1].ID, Content: "error"},
		llm.Message{Role: llm.RoleTool, ToolCallID: calls[2].ID, Content: "a/"})
	if _, err := c.Complete(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	// The model sees back exactly what it wrote.
	sent := srv.Requests()[1].Messages[2].ToolCalls
	if string(sent[0].Args) != broken || string(sent[1].Args) != `["ok"]` || string(sent[2].Args) != `{}` {
		t.Errorf("arguments sent back: %s | %s | %s", sent[0].Args, sent[1].Args, sent[2].Args)
	}
}

func TestCallHeadersAndConfigHeaders(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(script(llmtest.Text("ok")))
	defer srv.Close()
	c := newClient(t, srv, func(cfg *llm.Config) {
		cfg.Headers = map[string]string{"HTTP-Referer": "https://github.com/troupe-ai/troupe", "X-Title": "troupe"}
	})
	req := request("q")
	req.Kind = "explore"
	if _, err := c.Complete(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	h := srv.Requests()[0].Header
	if h.Get("HTTP-Referer") != "https://github.com/troupe-ai/troupe" || h.Get("X-Title") != "troupe" ||
		h.Get("X-Troupe-Kind") != "explore" || h.Get("X-Troupe-Agent") != "agent-1" || h.Get("X-Troupe-Run") != "run-1" {
		t.Errorf("headers = %v", h)
	}
}

func TestEnvironmentIgnored(t *testing.T) {
	// Not parallel: it sets environment variables.
	srv := llmtest.New(script(llmtest.Text("local")))
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "sk-from-env-0000")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-From-Env: yes")
	c := newClient(t, srv, func(cfg *llm.Config) { cfg.APIKey = "" })
	resp, err := c.Complete(t.Context(), request("q"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "local" {
		t.Errorf("content = %q", resp.Message.Content)
	}
	h := srv.Requests()[0].Header
	for _, k := range []string{"Authorization", "OpenAI-Organization", "OpenAI-Project", "X-From-Env"} {
		if v := h.Get(k); v != "" {
			t.Errorf("header %s = %q leaked from the environment", k, v)
		}
	}
}

func TestBadRequestNotSent(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(script(llmtest.Text("ok")))
	defer srv.Close()
	c := newClient(t, srv, nil)
	cases := map[string]llm.Request{
		"bad schema":   {Messages: request("q").Messages, Tools: []messages.ToolSpec{{Name: "grep", Parameters: json.RawMessage(`{"type":`)}}},
		"unknown role": {Messages: []llm.Message{{Role: "robot", Content: "x"}}},
		"orphan tool":  {Messages: []llm.Message{{Role: llm.RoleTool, Content: "x"}}},
	}
	for name, req := range cases {
		_, err := c.Complete(t.Context(), req, nil)
		if !errors.Is(err, llm.ErrBadRequest) {
			t.Errorf("%s: err = %v, want ErrBadRequest", name, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d bad requests were sent", n)
	}
}

func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "explore"},
		Turns: []llmtest.Turn{llmtest.Malformed(1), llmtest.Call(llmtest.Tool("grep", `{"pattern":"a"}`)), llmtest.Text("found")}}}})
	defer srv.Close()
	c := newClient(t, srv, nil)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			req := request("explore")
			req.Kind, req.Agent = "explore", "e"+string(rune('A'+i%26))+string(rune('a'+i/26))
			r1, err := c.Complete(context.Background(), req, nil)
			if err == nil && (r1.Attempts != 2 || len(r1.Message.ToolCalls) != 1) {
				err = errors.New(req.Agent + ": round 1 wrong")
			}
			if err == nil {
				var r2 llm.Response
				r2, err = c.Complete(context.Background(), req, nil)
				if err == nil && r2.Message.Content != "found" {
					err = errors.New(req.Agent + ": round 2 wrong: " + r2.Message.Content)
				}
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
	if got := len(srv.Requests()); got != 3*n {
		t.Errorf("%d requests, want %d", got, 3*n)
	}
}
