package web

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
)

// fakeSearch is a local stand-in for a provider's HTTP API: it checks
// what a real one would need (method, path, key, query) and answers in
// the provider's format.
func fakeSearch(t *testing.T, provider, key string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var query string
		var limit int
		switch provider {
		case SearchBrave:
			if r.Method != http.MethodGet || r.URL.Path != "/res/v1/web/search" || r.Header.Get("Accept") != "application/json" {
				http.Error(w, "bad request shape", http.StatusBadRequest)
				return
			}
			if r.Header.Get("X-Subscription-Token") != key {
				http.Error(w, `{"error":"invalid token"}`, http.StatusUnauthorized)
				return
			}
			query = r.URL.Query().Get("q")
			fmt.Sscan(r.URL.Query().Get("count"), &limit)
		case SearchTavily:
			var body struct {
				Query      string `json:"query"`
				MaxResults int    `json:"max_results"`
			}
			if r.Method != http.MethodPost || r.URL.Path != "/search" || json.NewDecoder(r.Body).Decode(&body) != nil {
				http.Error(w, "bad request shape", http.StatusBadRequest)
				return
			}
			if r.Header.Get("Authorization") != "Bearer "+key {
				http.Error(w, `{"detail":{"error":"Unauthorized: missing or invalid API key."}}`, http.StatusUnauthorized)
				return
			}
			query, limit = body.Query, body.MaxResults
		case SearchSearXNG:
			if r.Method != http.MethodGet || r.URL.Path != "/searx/search" || r.URL.Query().Get("format") != "json" {
				http.Error(w, "Forbidden", http.StatusForbidden)
				return
			}
			query, limit = r.URL.Query().Get("q"), 30 // SearXNG has no count: it answers a page
		}
		switch query {
		case "rate me":
			w.WriteHeader(http.StatusTooManyRequests)
			return
		case "break":
			fmt.Fprintf(w, "{not json")
			return
		case "echo key":
			http.Error(w, "upstream failed for token "+key, http.StatusBadGateway)
			return
		case "nothing":
			limit = 0
		}
		var hits []map[string]string
		for i := 1; i <= limit; i++ {
			hits = append(hits, map[string]string{
				"title": fmt.Sprintf("Result <strong>%d</strong> &amp; more", i),
				"url":   fmt.Sprintf("https://example.org/%d", i),
				"text":  fmt.Sprintf("About <strong>%s</strong>,\n number %d.", query, i),
			})
		}
		out := map[string]any{}
		rename := func(textKey string) []map[string]string {
			for _, h := range hits {
				h[textKey] = h["text"]
				delete(h, "text")
			}
			return hits
		}
		switch provider {
		case SearchBrave:
			out["web"] = map[string]any{"results": rename("description")}
		default:
			out["results"] = rename("content")
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func searchThrough(t *testing.T, s *tools.Session, args any) tools.Result {
	t.Helper()
	raw, _ := json.Marshal(args)
	ex := &tools.Executor{Tools: tools.NewRegistry(WebSearch()), Session: s}
	return ex.Run(t.Context(), []messages.ToolCall{{ID: "s1", Name: NameWebSearch, Args: raw}})[0]
}

func TestWebSearchProviders(t *testing.T) {
	t.Parallel()
	const key = "secret-key-123"
	for _, c := range []struct {
		provider, path string
	}{
		{SearchBrave, "/res/v1/web/search"},
		{SearchTavily, "/search"},
		{SearchSearXNG, "/searx"},
	} {
		t.Run(c.provider, func(t *testing.T) {
			t.Parallel()
			srv := fakeSearch(t, c.provider, key)
			s := newTestSession(t)
			configOf(s).Search = SearchConfig{Provider: c.provider, URL: srv.URL + c.path, APIKey: key}
			res := searchThrough(t, s, map[string]any{"query": "  nats   jetstream ", "limit": 2})
			want := "1. Result 1 & more\n   https://example.org/1\n   About nats jetstream, number 1.\n" +
				"2. Result 2 & more\n   https://example.org/2\n   About nats jetstream, number 2.\n"
			if res.IsError || res.Text != want {
				t.Fatalf("got %+v\nwant %q", res, want)
			}
			if res.Metadata["provider"] != c.provider || res.Metadata["results"] != 2 {
				t.Errorf("metadata %v", res.Metadata)
			}
			res = searchThrough(t, s, map[string]any{"query": "go"})
			if n := strings.Count(res.Text, "\n   https://"); n != defaultWebSearchLimit {
				t.Errorf("default limit: %d results", n)
			}
			for query, wantErr := range map[string]string{
				"rate me":  "rate limiting (HTTP 429)",
				"break":    "is not the JSON expected",
				"echo key": "answered HTTP 502: upstream failed for token [redacted]",
			} {
				res := searchThrough(t, s, map[string]any{"query": query})
				if !res.IsError || !strings.Contains(res.Text, wantErr) || strings.Contains(res.Text, key) {
					t.Errorf("%q: %+v, want an error with %q and no key", query, res, wantErr)
				}
			}
			if res := searchThrough(t, s, map[string]any{"query": "nothing"}); res.IsError || res.Text != "No results for \"nothing\".\n" {
				t.Errorf("no results: %+v", res)
			}
			if c.provider != SearchSearXNG {
				configOf(s).Search.APIKey = "wrong"
				res := searchThrough(t, s, map[string]any{"query": "go"})
				if !res.IsError || !strings.Contains(res.Text, c.provider+" refused the API key (HTTP 401)") {
					t.Errorf("wrong key: %+v", res)
				}
			} else {
				configOf(s).Search.URL = srv.URL + "/elsewhere"
				res := searchThrough(t, s, map[string]any{"query": "go"})
				if !res.IsError || !strings.Contains(res.Text, "enable the json format") {
					t.Errorf("json off: %+v", res)
				}
			}
		})
	}
}

func TestWebSearchBadInput(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	for _, c := range []struct {
		cfg  SearchConfig
		args string
		want string
	}{
		{SearchConfig{}, `{"query":"x"}`, "web_search is not available: no search provider is configured"},
		{SearchConfig{Provider: SearchBrave}, `{"query":"x"}`, "brave needs an API key"},
		{SearchConfig{Provider: SearchSearXNG}, `{"query":"x"}`, "searxng needs the instance's URL"},
		{SearchConfig{Provider: "bing"}, `{"query":"x"}`, `unknown search provider "bing"`},
		{SearchConfig{Provider: SearchSearXNG, URL: "http://127.0.0.1:1"}, `{"query":"  "}`, "query is empty"},
		{SearchConfig{Provider: SearchSearXNG, URL: "http://127.0.0.1:1"}, `{"query":"x","limit":21}`, "invalid arguments for web_search"},
		{SearchConfig{Provider: SearchSearXNG, URL: "http://127.0.0.1:1"}, `{"query":"x","limit":0}`, "invalid arguments for web_search"},
		{SearchConfig{Provider: SearchSearXNG, URL: "http://127.0.0.1:1"}, `{"query":"` + strings.Repeat("q ", 300) + `"}`, "keep it under 400"},
		{SearchConfig{Provider: SearchSearXNG, URL: "http://127.0.0.1:1"}, `{"query":"x"}`, "connection refused"},
	} {
		configOf(s).Search = c.cfg
		res := searchThrough(t, s, json.RawMessage(c.args))
		if !res.IsError || !strings.Contains(res.Text, c.want) {
			t.Errorf("%+v %s: %+v, want an error with %q", c.cfg, c.args, res, c.want)
		}
	}
}

func TestWebSearchTimesOut(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	s := newTestSession(t)
	configOf(s).Search = SearchConfig{Provider: SearchSearXNG, URL: srv.URL, Timeout: 50 * time.Millisecond}
	res := searchThrough(t, s, map[string]any{"query": "slow"})
	if !res.IsError || !strings.Contains(res.Text, "Client.Timeout exceeded") {
		t.Fatalf("%+v", res)
	}
}

func TestWebSearchRefusesAHugeAnswer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"results":[{"title":"`)
		io.WriteString(w, strings.Repeat("x", maxSearchBody))
		io.WriteString(w, `"}]}`)
	}))
	defer srv.Close()
	s := newTestSession(t)
	configOf(s).Search = SearchConfig{Provider: SearchSearXNG, URL: srv.URL}
	res := searchThrough(t, s, map[string]any{"query": "big"})
	if !res.IsError || !strings.Contains(res.Text, "the answer is over 4.0 MB") {
		t.Fatalf("%+v", res)
	}
}
