package actors_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/web"
)

func used(p, c int) *llmtest.Usage { return &llmtest.Usage{PromptTokens: p, CompletionTokens: c} }

// web_fetch with a prompt: the page goes to the cheap model as a side
// request, only its answer reaches the agent's next request, the tokens
// are charged to the agent and its budget, and the same prompt on the same
// page later is answered from the cache without a second extraction.
func TestWebFetchPromptIsAnsweredByTheCheapModel(t *testing.T) {
	var hits atomic.Int64
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><head><title>Client docs</title></head><body><main><h1>Timeouts</h1>
<p>The default request timeout is 42 seconds.</p><p>PAGE-ONLY-MARKER `+strings.Repeat("filler ", 500)+`</p></main></body></html>`)
	}))
	defer page.Close()
	fetch := fmt.Sprintf(`{"url":%q,"prompt":"What is the default request timeout?"}`, page.URL+"/docs")
	srv := llmtest.New(script(
		kind("root",
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{tc("web_fetch", fetch)}, Usage: used(100, 10)},
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{tc("web_fetch", fetch)}, Usage: used(100, 10)},
			llmtest.Turn{Text: "The default timeout is 42 s.", Usage: used(100, 10)}),
		kind(actors.ExtractKind, llmtest.Turn{Text: "The default request timeout is 42 seconds.", Usage: used(1000, 12)}),
	))
	defer srv.Close()
	rec := &actors.Recorder{}
	o := options(t, srv, workspace(t, nil), "find the default timeout", rec)
	o.Tools.Web = web.Config{AllowPrivate: true} // the page server is on loopback
	res := run(t, o)

	if res.Status != actors.StatusCompleted || res.Text != "The default timeout is 42 s." {
		t.Fatalf("result %+v", res.AgentResult)
	}
	ext := requestsOf(srv, actors.ExtractKind)
	if len(ext) != 1 || hits.Load() != 1 {
		t.Fatalf("%d extraction requests, %d page fetches; want 1 and 1 (the second call is cached)", len(ext), hits.Load())
	}
	x := ext[0]
	if x.Model != "small-model" || x.Agent != "root-extract" || len(x.Tools) != 0 || x.MaxTokens == 0 {
		t.Errorf("extraction request: model %s agent %s tools %v max_tokens %d", x.Model, x.Agent, x.Tools, x.MaxTokens)
	}
	if len(x.Messages) != 2 || !strings.Contains(x.Messages[1].Content, "Request: What is the default request timeout?") ||
		!strings.Contains(x.Messages[1].Content, "PAGE-ONLY-MARKER") || !strings.Contains(x.Messages[1].Content, "# Timeouts") ||
		!strings.Contains(x.Messages[0].Content, "untrusted") {
		t.Errorf("extraction messages: %+v", x.Messages)
	}
	roots := requestsOf(srv, "root")
	if len(roots) != 3 {
		t.Fatalf("%d root requests", len(roots))
	}
	for i, r := range roots[1:] {
		results := toolResults(r)
		last := results[len(results)-1]
		if !strings.Contains(last, "The default request timeout is 42 seconds.") || strings.Contains(last, "PAGE-ONLY-MARKER") || strings.Contains(last, "filler") {
			t.Errorf("round %d: the agent saw %q; want the answer only", i+2, last)
		}
	}
	// 3 rounds of 110 tokens, plus one extraction of 1012.
	if res.Usage.Total() != 3*110+1012 || res.Budget == nil || res.Budget.Used.Tokens != 3*110+1012 {
		t.Errorf("usage %+v, budget %+v; want %d tokens", res.Usage, res.Budget, 3*110+1012)
	}
	var fins []map[string]any
	for _, ev := range rec.OfType(messages.EvtToolFinished) {
		fins = append(fins, dataOf(t, ev))
	}
	if len(fins) != 2 {
		t.Fatalf("%d tool.finished events", len(fins))
	}
	meta, _ := fins[0]["metadata"].(map[string]any)
	ex, _ := meta["extraction"].(map[string]any)
	if ex["model"] != "small-model" || ex["tokens_in"] != float64(1000) || ex["tokens_out"] != float64(12) {
		t.Errorf("first call's extraction metadata %v", meta)
	}
	if fins[1]["cached"] != true || fins[1]["metadata"].(map[string]any)["extraction"] != nil {
		t.Errorf("second call: %v, want cached and no extraction cost", fins[1])
	}
}

// The web tools in an agent run: web_fetch for the root by default,
// web_search once a provider is configured, neither for explore agents;
// a refused fetch is an error result the agent reads, not a failure.
func TestWebToolsInAnAgentRun(t *testing.T) {
	var pageHits atomic.Int64
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pageHits.Add(1)
		fmt.Fprint(w, "internal admin page")
	}))
	defer private.Close()
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/search" || r.URL.Query().Get("format") != "json" {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		fmt.Fprintf(w, `{"results":[{"title":"NATS docs","url":"https://docs.nats.io/","content":"About %s"}]}`, r.URL.Query().Get("q"))
	}))
	defer searx.Close()
	srv := llmtest.New(script(
		kind("root",
			calls(tc("web_search", `{"query":"nats work queue"}`), tc("web_fetch", fmt.Sprintf(`{"url":%q}`, private.URL)),
				tc("delegate", `{"task":"list the files","type":"explore"}`)),
			say("done")),
		kind("explore", say("no files")),
	))
	defer srv.Close()
	o := options(t, srv, workspace(t, nil), "research", &actors.Recorder{})
	o.Tools.Web.Search = web.SearchConfig{Provider: web.SearchSearXNG, URL: searx.URL}
	o.Tools.Tiers = tools.Tiers{Budget: -1} // every definition sent: this test is about the web tools, not tiers
	res := run(t, o)
	if res.Status != actors.StatusCompleted {
		t.Fatalf("result %+v", res.AgentResult)
	}
	roots, explore := requestsOf(srv, "root"), requestsOf(srv, "explore")
	if len(roots) != 2 || len(explore) != 1 {
		t.Fatalf("%d root and %d explore requests", len(roots), len(explore))
	}
	if !has(roots[0].Tools, "web_fetch") || !has(roots[0].Tools, "web_search") {
		t.Errorf("root tools: %s", toolNames(roots[0]))
	}
	if has(explore[0].Tools, "web_fetch") || has(explore[0].Tools, "web_search") {
		t.Errorf("explore tools: %s", toolNames(explore[0]))
	}
	results := toolResults(roots[1])
	if len(results) != 3 {
		t.Fatalf("%d tool results", len(results))
	}
	if results[0] != "1. NATS docs\n   https://docs.nats.io/\n   About nats work queue\n" {
		t.Errorf("web_search result %q", results[0])
	}
	if !strings.Contains(results[1], "refused to connect: 127.0.0.1 is a loopback address") || pageHits.Load() != 0 {
		t.Errorf("web_fetch of a loopback address: %q (%d hits)", results[1], pageHits.Load())
	}
	if !strings.Contains(roots[0].Messages[0].Content, "Look things up on the web with web_search") {
		t.Errorf("the root's guidance does not mention the web tools")
	}

	// Without a provider, web_search is not offered, and a call to it is
	// an unknown tool.
	srv2 := llmtest.New(script(kind("root", calls(tc("web_search", `{"query":"x"}`)), say("done"))))
	defer srv2.Close()
	res = run(t, options(t, srv2, workspace(t, nil), "research", &actors.Recorder{}))
	r2 := requestsOf(srv2, "root")
	if res.Status != actors.StatusCompleted || len(r2) != 2 || has(r2[0].Tools, "web_search") || !has(r2[0].Tools, "web_fetch") {
		t.Fatalf("no provider: %+v, tools %s", res.AgentResult, toolNames(r2[0]))
	}
	if got := toolResults(r2[1])[0]; !strings.Contains(got, `unknown tool "web_search"`) {
		t.Errorf("call without a provider: %q", got)
	}
}
