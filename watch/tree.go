package watch

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// Agent statuses in the tree.
const (
	StatusRunning   = "running"
	StatusWaiting   = "waiting"   // for budget
	StatusThrottled = "throttled" // for its turn with the provider's rate limits
	StatusFinished  = "finished"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Agent is one agent as the events describe it.
type Agent struct {
	ID, Parent, Kind, Node, Model string
	Status                        string
	Reason                        string
	Error                         string // why it failed (agent.failed)
	Round                         int
	Tool                          string // the tool running now
	TokensIn, TokensOut           int
	CostUSD                       float64
	// Unpriced is set when a model call of this agent had no price
	// (llm.response cost_known false): CostUSD then says too little.
	Unpriced       bool
	Started, Ended time.Time
	Children       []string
	Task           string
	Findings       []string
	Changed        []string
	Attempt        int
	// Redelivered counts task.redelivered events about this agent: its
	// task went to another node after the one running it went away.
	Redelivered int
	// ThrottledMS is the time its model calls waited for their turn with
	// the hub's rate limits; Provider429s the 429s its calls got.
	ThrottledMS  int64
	Provider429s int
}

// Run is one run in the tree.
type Run struct {
	ID       string
	Task     string
	Started  time.Time
	Finished bool
	Status   string    // ... or StatusLost
	LeaseMS  int64     // the run's lease (run.started); 0: none
	Last     time.Time // the time of its latest event
	Reason   string
	Tokens   int64
	CostUSD  float64
	WallMS   int64
	Dropped  uint64
	Agents   map[string]*Agent
	order    []string // agents in order of appearance
	lastSeq  map[string]uint64
	// Missed counts the events this watcher never got: gaps in an agent's
	// seq, and, once run.finished names each agent's last seq, the tail
	// events after the last one seen; an event that comes late is taken
	// off (gaps.go).
	Missed  uint64
	missing map[string][]seqSpan // by agent: the seqs counted in Missed
}

// Node is a worker node seen in node events.
type Node struct {
	ID, Name string
	Kinds    []string
	Slots    int
	Left     bool
}

// Tree is the state of the runs seen so far. It is safe for concurrent
// use: Apply from the event reader, Snapshot or rendering from a drawer.
type Tree struct {
	mu    sync.Mutex
	runs  map[string]*Run
	order []string
	nodes map[string]*Node
	tail  []string
	tailN int
	diff  LastDiff
	// keep is how many runs the tree holds (0: all); older runs are
	// let go, finished ones first, and remembered in hidden by ID only
	// (whether they finished), so their later events cost a map lookup.
	keep   int
	hidden map[string]bool
	// unfinished counts the runs seen, held or hidden, not finished yet.
	unfinished int
	// refused counts the messages the event stream refused (malformed,
	// or published on a subject their envelope does not name).
	refused uint64
}

// LastDiff is the most recent change a file tool made, as its
// tool.finished event reported it.
type LastDiff struct {
	Agent, Tool string
	Stat        string // "+3 −1"
	Diff        string
}

// NewTree returns an empty tree that keeps the last tail event lines.
func NewTree(tail int) *Tree {
	return &Tree{runs: map[string]*Run{}, nodes: map[string]*Node{}, tailN: tail, hidden: map[string]bool{}}
}

// Apply adds one event to the tree. Events of unknown types only join the
// tail.
func (t *Tree) Apply(ev messages.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, _ := ev.Decode()
	if ev.Run == NodesRun || strings.HasPrefix(ev.Type, "node.") {
		t.applyNode(ev, v)
		t.addTail(ev, v)
		return
	}
	if _, gone := t.hidden[ev.Run]; gone {
		t.applyHidden(ev)
		return
	}
	r := t.run(ev.Run, ev.Time)
	if ev.Time.After(r.Last) {
		r.Last = ev.Time
	}
	key := seqKey(ev.Agent, ev.Attempt)
	r.saw(key, ev.Seq)
	switch {
	case ev.Agent == "run":
		t.applyRun(r, v)
		t.addTail(ev, v)
		return
	case ev.Kind == "node" || strings.HasPrefix(ev.Type, "task."):
		// A node's events in a run (task.redelivered) are about an agent;
		// the node itself is not one.
		if d, ok := v.(*messages.TaskRedelivered); ok {
			if a := r.Agents[d.Agent]; a != nil {
				a.Redelivered++
				a.Attempt = max(a.Attempt, d.Attempt)
			}
		}
		t.addTail(ev, v)
		return
	}
	a := t.agent(r, ev)
	switch d := v.(type) {
	case *messages.AgentStarted:
		a.Status, a.Task = StatusRunning, d.Task
		if a.Started.IsZero() {
			a.Started = ev.Time
		}
	case *messages.AgentSpawned:
		c := t.agent(r, messages.Event{Agent: d.Child, Parent: ev.Agent, Kind: d.Kind, Time: ev.Time})
		c.Model, c.Task = d.Model, d.Task
		if d.Placement == "remote" && c.Node == "" {
			c.Node = "(queued)"
		}
	case *messages.RoundStarted:
		a.Round, a.Model, a.Status, a.Tool = d.Round, d.Model, StatusRunning, ""
	case *messages.LLMResponse:
		a.TokensIn += d.TokensIn
		a.TokensOut += d.TokensOut
		a.CostUSD += d.CostUSD
		if !d.CostKnown && d.TokensIn+d.TokensOut > 0 {
			a.Unpriced = true
		}
	case *messages.ToolStarted:
		a.Tool = d.Tool
	case *messages.ToolFinished:
		if a.Tool == d.Tool {
			a.Tool = ""
		}
		if d.Diff != "" && !d.IsError {
			t.diff = LastDiff{Agent: ev.Agent, Tool: d.Tool, Stat: DiffStat(d.Metadata), Diff: d.Diff}
		}
	case *messages.BudgetWaiting:
		if w := r.Agents[d.Agent]; w != nil {
			w.Status = StatusWaiting
		}
	case *messages.LLMThrottled:
		a.throttled(d)
	case *messages.AgentEnded:
		a.Status, a.Reason, a.Error, a.Ended, a.Tool = endStatus(d.Status), d.Reason, d.Error, ev.Time, ""
		a.Findings, a.Changed = d.Findings, d.Changed
		a.Unpriced = a.Unpriced || d.Unpriced
		if d.TokensIn+d.TokensOut > 0 { // the end's totals are the agent's own
			a.TokensIn, a.TokensOut, a.CostUSD = d.TokensIn, d.TokensOut, d.CostUSD
		}
	}
	t.addTail(ev, v)
}

func endStatus(s string) string {
	switch s {
	case "completed":
		return StatusFinished
	case "failed":
		return StatusFailed
	}
	return StatusCancelled
}

func (t *Tree) applyRun(r *Run, v any) {
	switch d := v.(type) {
	case *messages.RunStarted:
		r.Task, r.LeaseMS = d.Task, d.LeaseMS
		if r.Status == StatusLost { // resumed
			r.Finished, r.Status = false, ""
			t.unfinished++
		}
	case *messages.RunFinished:
		if !r.Finished {
			t.unfinished--
		}
		r.Finished, r.Status, r.Reason = true, d.Status, d.Reason
		r.Tokens, r.CostUSD, r.WallMS, r.Dropped = d.Tokens, d.CostUSD, d.WallMS, d.EventsDropped
		for agent, last := range d.LastSeq { // the tail events never seen
			key := seqKey(agent, 0)
			if seen := r.lastSeq[key]; last > seen {
				r.miss(key, seen+1, last)
				r.lastSeq[key] = last
			}
		}
	}
}

// NodesRun is the run of node lifecycle events (node.joined, node.left).
const NodesRun = "nodes"

func seqKey(agent string, attempt int) string { return fmt.Sprintf("%s/%d", agent, attempt) }

func (t *Tree) applyNode(ev messages.Event, v any) {
	switch d := v.(type) {
	case *messages.NodeJoined:
		t.nodes[d.Node] = &Node{ID: d.Node, Name: d.Name, Kinds: d.Kinds, Slots: d.Slots}
	case *messages.NodeLeft:
		if n := t.nodes[d.Node]; n != nil {
			n.Left = true
		} else {
			t.nodes[d.Node] = &Node{ID: d.Node, Name: d.Name, Left: true}
		}
	}
}

func (t *Tree) run(id string, at time.Time) *Run {
	r := t.runs[id]
	if r == nil {
		r = &Run{ID: id, Started: at, Agents: map[string]*Agent{}, lastSeq: map[string]uint64{}}
		t.runs[id] = r
		t.order = append(t.order, id)
		t.unfinished++
		t.trim()
	}
	return r
}

// agent finds or adds the event's agent, with what the envelope says.
func (t *Tree) agent(r *Run, ev messages.Event) *Agent {
	a := r.Agents[ev.Agent]
	if a == nil {
		a = &Agent{ID: ev.Agent, Parent: ev.Parent, Kind: ev.Kind, Status: StatusRunning, Started: ev.Time}
		r.Agents[ev.Agent] = a
		r.order = append(r.order, ev.Agent)
		if p := r.Agents[ev.Parent]; p != nil && !slices.Contains(p.Children, a.ID) {
			p.Children = append(p.Children, a.ID)
		}
	}
	if ev.Node != "" {
		a.Node = ev.Node
	}
	if ev.Attempt > a.Attempt {
		a.Attempt = ev.Attempt
	}
	if ev.Kind != "" {
		a.Kind = ev.Kind
	}
	return a
}

func (t *Tree) addTail(ev messages.Event, v any) {
	if t.tailN == 0 {
		return
	}
	line := Describe(ev, v)
	if line == "" {
		return
	}
	t.tail = append(t.tail, line)
	if len(t.tail) > t.tailN {
		t.tail = t.tail[len(t.tail)-t.tailN:]
	}
}
