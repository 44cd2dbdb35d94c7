package watch

import (
	"slices"
	"strings"
)

// Reading the tree: copies of what it holds, safe to use while events
// keep coming.

// Runs returns copies of the runs seen, in order of appearance.
func (t *Tree) Runs() []Run {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Run, 0, len(t.order))
	for _, id := range t.order {
		r := *t.runs[id]
		r.Agents = make(map[string]*Agent, len(t.runs[id].Agents))
		for k, a := range t.runs[id].Agents {
			c := *a
			c.Children = slices.Clone(a.Children)
			r.Agents[k] = &c
		}
		r.order = slices.Clone(t.runs[id].order)
		r.lastSeq, r.missing = nil, nil // the tree's own
		out = append(out, r)
	}
	return out
}

// Nodes returns the nodes seen, by name.
func (t *Tree) Nodes() []Node {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Node, 0, len(t.nodes))
	for _, n := range t.nodes {
		out = append(out, *n)
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.Name+a.ID, b.Name+b.ID) })
	return out
}

// LastDiff returns the most recent file change seen (zero before any).
func (t *Tree) LastDiff() LastDiff {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.diff
}

// Tail returns the recent event lines, oldest first.
func (t *Tree) Tail() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.tail)
}

// AllFinished reports whether at least one run was seen and every run seen
// has finished.
func (t *Tree) AllFinished() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.runs)+len(t.hidden) > 0 && t.unfinished == 0
}

// Finished reports whether run has finished.
func (t *Tree) Finished(run string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.runs[run]; r != nil {
		return r.Finished
	}
	return t.hidden[run]
}

// Ordered lists a run's agents depth-first from its roots, with depths.
func (r Run) Ordered() (ids []string, depth map[string]int) {
	depth = map[string]int{}
	var walk func(id string, d int)
	seen := map[string]bool{}
	walk = func(id string, d int) {
		if seen[id] {
			return
		}
		seen[id] = true
		ids = append(ids, id)
		depth[id] = d
		for _, c := range r.Agents[id].Children {
			if r.Agents[c] != nil {
				walk(c, d+1)
			}
		}
	}
	for _, id := range r.order {
		a := r.Agents[id]
		if a.Parent == "" || r.Agents[a.Parent] == nil {
			walk(id, 0)
		}
	}
	for _, id := range r.order { // anything left (a cycle from forged events)
		walk(id, 0)
	}
	return ids, depth
}
