package actors

import (
	"slices"
	"sync"

	"github.com/troupe-ai/troupe/internal/text"
)

// SubAgents counts how the run's sub-agents ended: every agent below the
// root whose end reached this process (its local agents, and each remote
// child once; a remote child's own descendants are counted on its node).
type SubAgents struct {
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	// FirstFailure is "AGENT: why" for the first sub-agent that failed.
	FirstFailure string `json:"first_failure,omitempty"`
	// NotStarted is "AGENT (KIND): why" for each sub-agent that could not
	// be started (placed, isolated or spawned) once its parent asked for
	// it, the first 20 (each is also counted in Failed).
	NotStarted []string `json:"not_started,omitempty"`
}

// Total is the number of sub-agents that ended.
func (s SubAgents) Total() int { return s.Completed + s.Failed + s.Cancelled }

// subAgentTally adds up the ends of a run's sub-agents; it is safe for
// concurrent use (agents end on their own mailboxes), and a nil one counts
// nothing.
type subAgentTally struct {
	mu sync.Mutex
	s  SubAgents
}

func (t *subAgentTally) add(agent string, r AgentResult) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch r.Status {
	case StatusCompleted:
		t.s.Completed++
	case StatusFailed:
		t.s.Failed++
		if t.s.FirstFailure == "" {
			why := r.Err
			if why == "" {
				why = r.Reason
			}
			t.s.FirstFailure = agent + ": " + text.Clip(why, 500)
		}
	default:
		t.s.Cancelled++
	}
}

// notStarted names a sub-agent that could not be started (add counts
// it).
func (t *subAgentTally) notStarted(line string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.s.NotStarted) < maxNotStarted {
		t.s.NotStarted = append(t.s.NotStarted, line)
	}
}

func (t *subAgentTally) get() SubAgents {
	if t == nil {
		return SubAgents{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.s
	s.NotStarted = slices.Clone(s.NotStarted)
	return s
}
