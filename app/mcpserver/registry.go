package mcpserver

import (
	"fmt"
	"sync"
)

// registry holds the server's runs: those running, at most max, and the
// keep most recent finished ones.
type registry struct {
	mu        sync.Mutex
	runs      map[string]*run
	finished  []string // finished runs' IDs, oldest first
	running   int      // runs reserved and not finished
	max, keep int
}

func newRegistry(max, keep int) *registry {
	return &registry{runs: map[string]*run{}, max: max, keep: keep}
}

// reserve takes a slot for a run about to start, or says none is free.
func (g *registry) reserve() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running >= g.max {
		return fmt.Errorf("%d runs are running here already (mcp.max_runs: %d): wait for one to end, or cancel_run one", g.running, g.max)
	}
	g.running++
	return nil
}

// release gives back a slot whose run did not start.
func (g *registry) release() {
	g.mu.Lock()
	g.running--
	g.mu.Unlock()
}

// add records a started run.
func (g *registry) add(r *run) {
	g.mu.Lock()
	g.runs[r.id] = r
	g.mu.Unlock()
}

// finish frees r's slot and remembers it among the finished runs,
// forgetting the oldest beyond keep.
func (g *registry) finish(r *run) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	g.finished = append(g.finished, r.id)
	for len(g.finished) > g.keep {
		delete(g.runs, g.finished[0])
		g.finished = g.finished[1:]
	}
}

// get is the run of id.
func (g *registry) get(id string) (*run, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.runs[id]
	if r == nil {
		return nil, fmt.Errorf("no run %q here: it was not started by this server, or finished before the last %d finished runs (mcp.keep_runs)", id, g.keep)
	}
	return r, nil
}

// size is how many runs are remembered, and how many of them run.
func (g *registry) size() (remembered, running int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.runs), g.running
}
