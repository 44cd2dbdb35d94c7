package tools

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"
)

//go:embed search_tools.md
var searchToolsDoc string

// MetaLoadedTools is the metadata key under which search_tools names the
// tools it loaded ([]string); the agent loop sends their definitions from
// its next round on.
const MetaLoadedTools = "loaded_tools"

// SearchToolsParams are search_tools' arguments.
type SearchToolsParams struct {
	Query string `json:"query" jsonschema:"words about what you need, or exact tool names"`
	Limit int    `json:"limit,omitempty" jsonschema:"most tools to load; default 5, max 20"`
}

// defaultSearchLimit and maxSearchLimit bound how many tools one call loads.
const (
	defaultSearchLimit = 5
	maxSearchLimit     = 20
)

// SearchTools returns the search_tools tool over catalog, the tools an
// agent is allowed but is sent by name only (Tiers.Offer). Its description
// lists the catalog's names, one a line; a call matches its query against
// the names and descriptions and reports the matches it loaded under
// MetaLoadedTools. It changes nothing itself: the agent loop loads them.
func SearchTools(catalog *Registry) Tool {
	desc := searchToolsDoc
	if names := catalog.Names(); len(names) > 0 {
		desc = strings.TrimRight(desc, "\n") + fmt.Sprintf("\n\nTools you can load (%d):\n%s\n", len(names), strings.Join(names, "\n"))
	}
	return New(Spec{Name: NameSearchTools, Description: desc, ReadOnly: true, Parallel: ParallelSafe, Tier: TierAlways,
		Truncation: Head(16 * 1024)},
		func(ctx context.Context, _ *Session, p SearchToolsParams) (Result, error) {
			return searchTools(catalog, p), nil
		}, Minimum("limit", 1), Maximum("limit", maxSearchLimit))
}

func searchTools(catalog *Registry, p SearchToolsParams) Result {
	terms := strings.FieldsFunc(strings.ToLower(p.Query), func(r rune) bool {
		return r == ' ' || r == ',' || r == ';' || r == '\t' || r == '\n'
	})
	if len(terms) == 0 {
		return Errorf("search_tools: query is empty; give words about what you need, or exact tool names from the list in this tool's description")
	}
	if len(catalog.names) == 0 {
		return Text("No tools are waiting to be loaded: every tool you may call is already in your tool list.")
	}
	limit := p.Limit
	if limit <= 0 {
		limit = defaultSearchLimit
	}
	type hit struct {
		name  string
		score int
	}
	var hits []hit
	for _, name := range catalog.names {
		if s := matchScore(catalog.byName[name].Spec(), terms); s > 0 {
			hits = append(hits, hit{name, s})
		}
	}
	if len(hits) == 0 {
		return Text(fmt.Sprintf("No tool matches %q. Tools you can load: %s", p.Query, strings.Join(catalog.names, ", ")))
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return b.score - a.score }) // names are already sorted
	more := 0
	if len(hits) > limit {
		more = len(hits) - limit
		hits = hits[:limit]
	}
	var b strings.Builder
	loaded := make([]string, len(hits))
	fmt.Fprintf(&b, "Loaded %d %s; %s in your tool list from your next turn:\n", len(hits), plural(len(hits), "tool", "tools"),
		plural(len(hits), "its definition is", "their definitions are"))
	for i, h := range hits {
		loaded[i] = h.name
		fmt.Fprintf(&b, "- %s: %s\n", h.name, catalog.byName[h.name].Spec().Summary())
	}
	if more > 0 {
		fmt.Fprintf(&b, "%d more %s; narrow the query or raise limit to load them.\n", more, plural(more, "tool matches", "tools match"))
	}
	return Text(b.String()).WithMeta(MetaLoadedTools, loaded)
}

// matchScore rates how well a tool matches the query's terms: an exact
// name (or the part after an mcp__server__ prefix) above a word of the
// name, above part of the name, above a word in the description.
func matchScore(s Spec, terms []string) int {
	name := strings.ToLower(s.Name)
	short := name
	if i := strings.LastIndex(name, "__"); i >= 0 {
		short = name[i+2:]
	}
	words := strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' || r == '.' })
	desc := strings.ToLower(s.Description)
	score := 0
	for _, t := range terms {
		switch {
		case t == name || t == short:
			score += 100
		case slices.Contains(words, t):
			score += 5
		case strings.Contains(name, t):
			score += 3
		case len(t) > 2 && strings.Contains(desc, t):
			score++
		}
	}
	return score
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
