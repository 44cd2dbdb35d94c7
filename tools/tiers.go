package tools

import (
	"math"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/troupe-ai/troupe/messages"
)

// DefaultDefinitionBudget is how many estimated tokens the definitions of
// an agent's optional tools (every tier but TierAlways) may take in each
// request before they are deferred to search_tools.
const DefaultDefinitionBudget = 1000

// CharsPerToken is the ratio the tool-definition estimate uses; it is
// actors/convo's default, so the budget and the context estimate agree.
const CharsPerToken = 3.5

// DefinitionChars is what a tool definition adds to every request, counted
// as the context estimate counts it: its name, description and schema.
func DefinitionChars(s messages.ToolSpec) int {
	return utf8.RuneCountInString(s.Name) + utf8.RuneCountInString(s.Description) + utf8.RuneCount(s.Parameters)
}

// DefinitionTokens estimates the tokens of tool definitions per request.
func DefinitionTokens(specs ...messages.ToolSpec) int {
	chars := 0
	for _, s := range specs {
		chars += DefinitionChars(s)
	}
	return int(math.Ceil(float64(chars) / CharsPerToken))
}

// Tiers applies the tools' visibility tiers: which definitions an agent is
// sent in a round, and which are only named, to be loaded by search_tools.
//
// TierAlways tools are always sent. The others are optional: while their
// definitions fit in Budget they are all sent too; beyond it TierOnRelevance
// tools are sent in name order as long as they fit, TierOnDemand tools never,
// and every optional tool not sent is deferred: listed by name in the
// description of search_tools, which is then added. A deferred tool that
// search_tools loaded, or that the agent called, is sent from then on.
type Tiers struct {
	// Budget is the estimated tokens optional definitions may take; 0
	// means DefaultDefinitionBudget and a negative budget never defers.
	Budget int
	// Overrides set the tier of tools by name or by path.Match pattern
	// (mcp__github__*); an exact name wins over a pattern.
	Overrides map[string]Tier
}

// TierOf is s's tier after the overrides. A tool that declares none
// (the zero Tier, e.g. a library user's tool) is TierAlways.
func (t Tiers) TierOf(s Spec) Tier {
	if tier, ok := t.Overrides[s.Name]; ok {
		return tier
	}
	keys := make([]string, 0, len(t.Overrides))
	for k := range t.Overrides {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first matching pattern in name order, so the outcome is stable
	for _, k := range keys {
		if ok, _ := path.Match(k, s.Name); ok {
			return t.Overrides[k]
		}
	}
	if s.Tier == 0 {
		return TierAlways
	}
	return s.Tier
}

func (t Tiers) budget() int {
	if t.Budget == 0 {
		return DefaultDefinitionBudget
	}
	return t.Budget
}

// Offer is an agent's tools in one round.
type Offer struct {
	// Callable is what the agent may call: every tool it is allowed,
	// deferred ones included (a call to a deferred tool runs and loads it),
	// plus search_tools when anything is deferred.
	Callable *Registry
	// Specs are the definitions sent to the model, sorted by name.
	Specs []messages.ToolSpec
	// Deferred names the tools listed by name only, sorted.
	Deferred []string
}

// Tokens estimates the tokens the offer's definitions cost per request.
func (o Offer) Tokens() int { return DefinitionTokens(o.Specs...) }

// Chars is the offer's definitions' size in characters.
func (o Offer) Chars() int {
	n := 0
	for _, s := range o.Specs {
		n += DefinitionChars(s)
	}
	return n
}

// IsDeferred reports whether name is deferred in this offer.
func (o Offer) IsDeferred(name string) bool {
	_, found := slices.BinarySearch(o.Deferred, name)
	return found
}

// Offer builds an agent's offer from the tools it is allowed and the
// names it has loaded (by search_tools or by calling them).
func (t Tiers) Offer(allowed *Registry, loaded map[string]bool) Offer {
	type entry struct {
		spec messages.ToolSpec
		tier Tier
	}
	var full, optional []entry
	optTokens := 0
	for _, s := range allowed.Specs() {
		if s.Name == NameSearchTools {
			continue // the offer adds its own, over this round's deferred tools
		}
		e := entry{messages.ToolSpec{Name: s.Name, Description: s.Description, Parameters: s.SchemaJSON()}, t.TierOf(s)}
		if e.tier == TierAlways || loaded[s.Name] {
			full = append(full, e)
			continue
		}
		optional = append(optional, e)
		optTokens += DefinitionTokens(e.spec)
	}
	budget := t.budget()
	if budget < 0 || optTokens <= budget {
		return Offer{Callable: allowed, Specs: allowed.ToolSpecs()}
	}
	var deferred []Tool
	var names []string
	room := budget
	for _, e := range optional {
		if tok := DefinitionTokens(e.spec); e.tier == TierOnRelevance && tok <= room {
			room -= tok
			full = append(full, e)
			continue
		}
		tool, _ := allowed.Get(e.spec.Name)
		deferred = append(deferred, tool)
		names = append(names, e.spec.Name)
	}
	search := SearchTools(NewRegistry(deferred...))
	callable := NewRegistry(append(slices.DeleteFunc(allowedTools(allowed), func(t Tool) bool {
		return t.Spec().Name == NameSearchTools // the caller's own, with another catalog
	}), search)...)
	specs := make([]messages.ToolSpec, 0, len(full)+1)
	for _, e := range full {
		specs = append(specs, e.spec)
	}
	s := search.Spec()
	specs = append(specs, messages.ToolSpec{Name: s.Name, Description: s.Description, Parameters: s.SchemaJSON()})
	slices.SortFunc(specs, func(a, b messages.ToolSpec) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(names)
	return Offer{Callable: callable, Specs: specs, Deferred: names}
}

func allowedTools(r *Registry) []Tool {
	out := make([]Tool, 0, len(r.names))
	for _, n := range r.names {
		out = append(out, r.byName[n])
	}
	return out
}
