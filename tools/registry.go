package tools

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/troupe-ai/troupe/messages"
)

// Registry is a set of tools looked up by name, sorted by name so prompts
// are deterministic.
type Registry struct {
	byName map[string]Tool
	names  []string
}

// NewRegistry builds a registry of ts, which must have distinct names (a
// duplicate is a programming error and panics; use BuildRegistry for tools
// that come from users).
func NewRegistry(ts ...Tool) *Registry {
	r, err := BuildRegistry(ts...)
	if err != nil {
		panic(err.Error())
	}
	return r
}

// BuildRegistry builds a registry of ts; two tools with one name are an
// error.
func BuildRegistry(ts ...Tool) (*Registry, error) {
	r := &Registry{byName: make(map[string]Tool, len(ts))}
	for _, t := range ts {
		n := t.Spec().Name
		if _, dup := r.byName[n]; dup {
			return nil, fmt.Errorf("tools: two tools are named %q", n)
		}
		r.byName[n] = t
		r.names = append(r.names, n)
	}
	sort.Strings(r.names)
	return r, nil
}

// Filter returns the registry restricted to the names in allow (an agent
// kind's allow-list). Names not in the registry are ignored.
func (r *Registry) Filter(allow []string) *Registry {
	var ts []Tool
	for _, n := range r.names {
		if slices.Contains(allow, n) {
			ts = append(ts, r.byName[n])
		}
	}
	return NewRegistry(ts...)
}

// Get returns the named tool.
func (r *Registry) Get(name string) (Tool, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// Names returns the tool names, sorted.
func (r *Registry) Names() []string { return slices.Clone(r.names) }

// Specs returns the specs, sorted by name.
func (r *Registry) Specs() []Spec {
	out := make([]Spec, len(r.names))
	for i, n := range r.names {
		out[i] = r.byName[n].Spec()
	}
	return out
}

// ToolSpecs exports the provider-neutral specs sent to the model.
func (r *Registry) ToolSpecs() []messages.ToolSpec {
	out := make([]messages.ToolSpec, len(r.names))
	for i, n := range r.names {
		s := r.byName[n].Spec()
		out[i] = messages.ToolSpec{Name: s.Name, Description: s.Description, Parameters: s.SchemaJSON()}
	}
	return out
}

// unknownTool is the error result for a name not in the registry.
func (r *Registry) unknownTool(name string) Result {
	return Errorf("unknown tool %q; available tools: %s", name, strings.Join(r.names, ", "))
}
