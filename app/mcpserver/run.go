package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/messages"
)

// maxFindings bounds the findings a run keeps for its answer.
const maxFindings = 200

// run is one run started by a tool call, and what its events said so far.
type run struct {
	id     string
	cancel context.CancelFunc
	done   chan struct{} // closed when the run ended
	start  time.Time
	budget int64  // the run's token budget
	note   string // said about its arguments (a clamped budget)

	mu       sync.Mutex
	res      actors.Result
	err      error
	findings []string
	agents   map[string]string // agent → spawned, running, completed, failed or cancelled
	tokens   int64
	latest   string // the latest finding, or the latest agent's answer
	changed  uint64 // counts the events that changed what progress shows
}

func newRun(id string, budget int64, note string) *run {
	return &run{id: id, done: make(chan struct{}), start: time.Now(), budget: budget, note: note, agents: map[string]string{}}
}

// collect keeps what progress and the answer show: each agent's status,
// the tokens, and the explore agents' findings.
func (r *run) collect(ev messages.Event) {
	if ev.Agent == "" || ev.Agent == "run" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.Type {
	case messages.EvtAgentSpawned:
		if r.agents[ev.Agent] == "" {
			r.agents[ev.Agent] = "spawned"
		}
	case messages.EvtAgentStarted:
		r.agents[ev.Agent] = "running"
	case messages.EvtLLMResponse:
		if d, err := messages.DecodeAs[messages.LLMResponse](ev); err == nil {
			r.tokens += int64(d.TokensIn + d.TokensOut)
		}
	case messages.EvtAgentFinished, messages.EvtAgentFailed, messages.EvtAgentCancelled:
		d, err := messages.DecodeAs[messages.AgentEnded](ev)
		if err != nil {
			return
		}
		r.agents[ev.Agent] = d.Status
		if ev.Kind == "explore" && len(d.Findings) > 0 {
			r.latest = d.Findings[len(d.Findings)-1]
			r.findings = append(r.findings, d.Findings...)
			if len(r.findings) > maxFindings {
				r.findings = r.findings[:maxFindings]
			}
		}
	default:
		return
	}
	r.changed++
}

// end records the run's outcome.
func (r *run) end(res actors.Result, err error) {
	r.mu.Lock()
	r.res, r.err = res, err
	r.mu.Unlock()
	close(r.done)
}

// ended says whether the run is over.
func (r *run) ended() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// AgentCounts are a run's agents by status.
type AgentCounts struct {
	Running   int `json:"running"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
}

// counts are the agents by status (spawned ones count as running).
func (r *run) counts() AgentCounts {
	var c AgentCounts
	for _, st := range r.agents {
		switch st {
		case "completed":
			c.Completed++
		case "failed":
			c.Failed++
		case "cancelled":
			c.Cancelled++
		default:
			c.Running++
		}
	}
	return c
}

// progress is the line a progress notification carries, and the count
// of changes it reflects.
func (r *run) progress() (string, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.counts()
	var b strings.Builder
	fmt.Fprintf(&b, "run %s, %s: agents %d running, %d completed, %d failed, %d cancelled; %d tokens",
		r.id, time.Since(r.start).Round(time.Second), c.Running, c.Completed, c.Failed, c.Cancelled, r.tokens)
	if r.latest != "" {
		fmt.Fprintf(&b, "; latest finding %s", r.latest)
	}
	return b.String(), r.changed
}

// status is what the tools answer about r: running, or its outcome.
func (r *run) status() RunStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := RunStatus{Run: r.id, Status: "running", BudgetTokens: r.budget, Note: r.note, Agents: r.counts(), Tokens: r.tokens}
	if !r.ended() {
		return st
	}
	st.Status, st.Reason, st.Answer, st.Error = r.res.Status, r.res.Reason, r.res.Text, r.res.Err
	if r.err != nil {
		st.Status, st.Error = "failed", r.err.Error()
	}
	if u := int64(r.res.Usage.PromptTokens + r.res.Usage.CompletionTokens); u > 0 {
		st.Tokens = u
	}
	if b := r.res.Budget; b != nil {
		st.Tokens, st.CostUSD, st.ToolCalls = b.Used.Tokens, b.Used.CostUSD, b.Used.ToolCalls
		st.BudgetTokens = b.Limits.Tokens // what the run's budget actor held it to
	}
	st.Findings = append([]string(nil), r.findings...)
	return st
}

// RunStatus is what the tools answer about a run.
type RunStatus struct {
	Run          string      `json:"run"`
	Status       string      `json:"status" jsonschema:"running, completed, failed or cancelled"`
	Reason       string      `json:"reason,omitempty"`
	Answer       string      `json:"answer,omitempty"`
	Error        string      `json:"error,omitempty"`
	BudgetTokens int64       `json:"budget_tokens" jsonschema:"the run's token budget"`
	Note         string      `json:"note,omitempty" jsonschema:"what became of the arguments, e.g. a budget clamped to the configured one"`
	Agents       AgentCounts `json:"agents" jsonschema:"the run's agents by status"`
	Tokens       int64       `json:"tokens,omitempty"`
	CostUSD      float64     `json:"cost_usd,omitempty"`
	ToolCalls    int64       `json:"tool_calls,omitempty"`
	Findings     []string    `json:"findings,omitempty" jsonschema:"path:line references the explore agents found"`
}
