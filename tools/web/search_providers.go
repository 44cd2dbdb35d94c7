package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/troupe-ai/troupe/tools"
	"golang.org/x/net/html"
)

// SearchResult is one hit of a web search.
type SearchResult struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet"`
}

// searchProvider is one search API behind web_search.
type searchProvider interface {
	// name is the provider's name, for messages.
	name() string
	// request builds the HTTP request for query and limit.
	request(ctx context.Context, query string, limit int) (*http.Request, error)
	// parse reads a 200 answer's body.
	parse(body []byte) ([]SearchResult, error)
}

// The public endpoints of the providers with one.
const (
	braveEndpoint  = "https://api.search.brave.com/res/v1/web/search"
	tavilyEndpoint = "https://api.tavily.com/search"
)

// newSearchProvider returns the provider c names, or an error in words.
func newSearchProvider(c SearchConfig) (searchProvider, error) {
	switch c.Provider {
	case SearchBrave:
		if c.APIKey == "" {
			return nil, errors.New("brave needs an API key (tools.web.search.api_key or BRAVE_API_KEY)")
		}
		return brave{endpoint: or(c.URL, braveEndpoint), key: c.APIKey}, nil
	case SearchTavily:
		if c.APIKey == "" {
			return nil, errors.New("tavily needs an API key (tools.web.search.api_key or TAVILY_API_KEY)")
		}
		return tavily{endpoint: or(c.URL, tavilyEndpoint), key: c.APIKey}, nil
	case SearchSearXNG:
		if c.URL == "" {
			return nil, errors.New("searxng needs the instance's URL (tools.web.search.url or SEARXNG_URL)")
		}
		return searxng{base: strings.TrimRight(c.URL, "/")}, nil
	case "":
		return nil, errors.New("no search provider is configured (tools.web.search.provider: brave, tavily or searxng)")
	}
	return nil, fmt.Errorf("unknown search provider %q (want brave, tavily or searxng)", c.Provider)
}

func or(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// brave is the Brave Search API: GET with the key in X-Subscription-Token.
type brave struct{ endpoint, key string }

func (brave) name() string { return SearchBrave }

func (b brave) request(ctx context.Context, query string, limit int) (*http.Request, error) {
	u, err := url.Parse(b.endpoint)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", b.endpoint, err)
	}
	q := u.Query()
	q.Set("q", query)
	q.Set("count", strconv.Itoa(limit))
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Subscription-Token", b.key)
	return req, nil
}

func (brave) parse(body []byte) ([]SearchResult, error) {
	var r struct {
		Web struct {
			Results []struct {
				Title       string `json:"title"`
				URL         string `json:"url"`
				Description string `json:"description"`
			} `json:"results"`
		} `json:"web"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	out := make([]SearchResult, 0, len(r.Web.Results))
	for _, h := range r.Web.Results {
		out = append(out, SearchResult{Title: h.Title, URL: h.URL, Snippet: h.Description})
	}
	return out, nil
}

// tavily is the Tavily search API: POST JSON with a bearer key.
type tavily struct{ endpoint, key string }

func (tavily) name() string { return SearchTavily }

func (t tavily) request(ctx context.Context, query string, limit int) (*http.Request, error) {
	body, err := json.Marshal(map[string]any{"query": query, "max_results": limit})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.key)
	return req, nil
}

func (tavily) parse(body []byte) ([]SearchResult, error) { return parseResults(body) }

// parseResults reads the answer shape Tavily and SearXNG share: results
// with a title, a URL and their content as the snippet.
func parseResults(body []byte) ([]SearchResult, error) {
	var r struct {
		Results []struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	out := make([]SearchResult, 0, len(r.Results))
	for _, h := range r.Results {
		out = append(out, SearchResult{Title: h.Title, URL: h.URL, Snippet: h.Content})
	}
	return out, nil
}

// searxng is a SearXNG instance's JSON API (format=json must be enabled
// in its settings).
type searxng struct{ base string }

func (searxng) name() string { return SearchSearXNG }

func (s searxng) request(ctx context.Context, query string, _ int) (*http.Request, error) {
	u, err := url.Parse(s.base + "/search")
	if err != nil {
		return nil, fmt.Errorf("url %q: %w", s.base, err)
	}
	q := u.Query()
	q.Set("q", query)
	q.Set("format", "json")
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	return req, nil
}

func (searxng) parse(body []byte) ([]SearchResult, error) { return parseResults(body) }

// maxSearchBody caps a provider's answer.
const maxSearchBody = 4 << 20

// runSearch asks p and returns its results, or an error in words that
// never holds the key.
func runSearch(ctx context.Context, c SearchConfig, p searchProvider, query string, limit int) ([]SearchResult, error) {
	req, err := p.request(ctx, query, limit)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", webUserAgent)
	client := &http.Client{Timeout: c.timeout()}
	resp, err := client.Do(req)
	if err != nil {
		return nil, scrubKey(unwrapURLError(err), c.APIKey)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchBody+1))
	if err != nil {
		return nil, scrubKey(fmt.Errorf("read the answer: %w", err), c.APIKey)
	}
	if len(body) > maxSearchBody {
		return nil, fmt.Errorf("the answer is over %s; not read", humanBytes(maxSearchBody))
	}
	switch code := resp.StatusCode; {
	case code == http.StatusUnauthorized || code == http.StatusForbidden && p.name() != SearchSearXNG:
		return nil, fmt.Errorf("%s refused the API key (HTTP %d); check tools.web.search.api_key", p.name(), code)
	case code == http.StatusForbidden:
		return nil, fmt.Errorf("searxng refused the request (HTTP 403): enable the json format in the instance's settings.yml (search.formats)")
	case code == http.StatusTooManyRequests:
		return nil, fmt.Errorf("%s is rate limiting (HTTP 429); search less often or later", p.name())
	case code != http.StatusOK:
		return nil, scrubKey(fmt.Errorf("%s answered HTTP %d: %s", p.name(), code, excerpt(body)), c.APIKey)
	}
	res, err := p.parse(body)
	if err != nil {
		return nil, fmt.Errorf("%s's answer is not the JSON expected: %v", p.name(), err)
	}
	for i := range res {
		res[i].Title = collapseSpace(stripTags(res[i].Title))
		res[i].Snippet = collapseSpace(stripTags(res[i].Snippet))
		res[i].URL = strings.TrimSpace(tidyText(res[i].URL))
	}
	return res, nil
}

// stripTags drops HTML markup from a snippet (Brave marks the matched
// words with <strong>) and decodes its entities.
func stripTags(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return tidyText(s)
	}
	var b strings.Builder
	z := html.NewTokenizer(strings.NewReader(s))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return tidyText(b.String())
		case html.TextToken:
			b.Write(z.Text())
		}
	}
}

// excerpt is the start of an error body, on one line.
func excerpt(body []byte) string {
	s := collapseSpace(tidyText(strings.ToValidUTF8(string(body), "\uFFFD")))
	if len(s) > 300 {
		s = tools.HeadBytes(s, 300) + "…"
	}
	if s == "" {
		s = "(empty answer)"
	}
	return s
}

// scrubKey removes key from err's text.
func scrubKey(err error, key string) error {
	if err == nil || key == "" || !strings.Contains(err.Error(), key) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), key, "[redacted]"))
}
