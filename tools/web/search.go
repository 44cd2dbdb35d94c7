package web

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/troupe-ai/troupe/tools"
)

//go:embed search.md
var webSearchDoc string

// WebSearchParams are web_search's arguments.
type WebSearchParams struct {
	Query string `json:"query" jsonschema:"what to search the web for, as you would type it into a search engine"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many results to return (default 5, at most 20)"`
}

// Bounds of web_search's limit.
const (
	defaultWebSearchLimit = 5
	maxWebSearchLimit     = 20
	maxQueryLength        = 400
)

// WebSearch returns the web_search tool: a query to the configured search
// provider (Brave, Tavily or a SearXNG instance), answered as title, URL
// and snippet lines. It is offered only when a provider is configured.
func WebSearch() tools.Tool {
	return tools.New(tools.Spec{
		Guidance: []tools.GuidanceLine{{Section: tools.SectionWhichTool, Order: 60, Text: func(has func(...string) bool) string {
			if !has(NameWebFetch) {
				return ""
			}
			return "Look things up on the web with web_search, then read the pages that matter with web_fetch; give web_fetch a prompt saying what you need, so only the answer comes back."
		}}},
		Name: NameWebSearch, Description: webSearchDoc, ReadOnly: true,
		Cacheable: false, Parallel: tools.ParallelSafe, Tier: tools.TierOnRelevance, Truncation: tools.Head(16 * 1024)},
		runWebSearch, tools.Minimum("limit", 1), tools.Maximum("limit", maxWebSearchLimit))
}

func runWebSearch(ctx context.Context, s *tools.Session, p WebSearchParams) (tools.Result, error) {
	q := collapseSpace(p.Query)
	switch {
	case q == "":
		return tools.Errorf("web_search: query is empty"), nil
	case len(q) > maxQueryLength:
		return tools.Errorf("web_search: the query is %d characters long; keep it under %d (a search query, not a question to a person)", len(q), maxQueryLength), nil
	}
	limit := p.Limit
	if limit == 0 {
		limit = defaultWebSearchLimit
	}
	c := configOf(s).Search
	prov, err := newSearchProvider(c)
	if err != nil {
		return tools.Errorf("web_search is not available: %v", err), nil
	}
	res, err := runSearch(ctx, c, prov, q, limit)
	switch {
	case err != nil && ctx.Err() != nil:
		return tools.Result{}, ctx.Err()
	case err != nil:
		return tools.Errorf("web_search: %v", err), nil
	}
	if len(res) > limit {
		res = res[:limit]
	}
	r := tools.Text(renderSearch(q, res)).WithMeta("provider", prov.name()).WithMeta("results", len(res))
	return r, nil
}

// renderSearch writes one block per result: number and title, URL,
// snippet.
func renderSearch(query string, res []SearchResult) string {
	if len(res) == 0 {
		return fmt.Sprintf("No results for %q.\n", query)
	}
	var b strings.Builder
	for i, h := range res {
		title := h.Title
		if title == "" {
			title = "(no title)"
		}
		fmt.Fprintf(&b, "%d. %s\n   %s\n", i+1, title, h.URL)
		if h.Snippet != "" {
			fmt.Fprintf(&b, "   %s\n", h.Snippet)
		}
	}
	return b.String()
}
