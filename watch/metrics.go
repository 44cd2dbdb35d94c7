package watch

import (
	"encoding/json"
	"strconv"
	"sync"

	"github.com/troupe-ai/troupe/messages"
)

// Metrics are the seed's measures of how well a run used its tools and
// tokens, computed from the run's events alone (MetricsCollector), so
// `run`, `watch` and any subscriber compute the same numbers.
// docs/metrics.md defines each.
type Metrics struct {
	// ShellFileOps: shell calls whose leading program does what a file
	// tool does better (ShellFileOp), of all shell calls.
	ShellFileOps Share `json:"shell_file_ops"`
	// GrepFilesMode: grep calls in files mode (the default), of all grep
	// calls.
	GrepFilesMode Share `json:"grep_files_mode"`
	// BlindWrites: write_file, edit_file and apply_patch calls on an
	// existing file whose current content the agent had not read, of all
	// their calls.
	BlindWrites Share `json:"blind_writes"`
	// ToolResultShare: per model call, the estimated tokens of tool results
	// in the prompt over the prompt's estimated tokens.
	ToolResultShare PerRound `json:"tool_result_share"`
	// CacheHits: tool calls served from the result cache, of calls whose
	// result could have come from it.
	CacheHits Share `json:"cache_hits"`
	// ParallelRounds: rounds with two or more tool calls where at least two
	// could run at the same time, of rounds with two or more tool calls.
	ParallelRounds Share `json:"parallel_rounds"`
	// TokensByKind: tokens (prompt + completion, compaction included) per
	// agent kind.
	TokensByKind map[string]int64 `json:"tokens_by_kind"`
	// ExploreVsWorker: explore agents' tokens against worker agents'.
	ExploreVsWorker Share `json:"explore_vs_worker"`
	// RateLimits: what the hub's shared provider rate limits cost the run.
	RateLimits RateLimitWaits `json:"rate_limits"`
}

// RateLimitWaits sums a run's llm.throttled events: the model calls that
// waited for their turn and how long in all, and the provider's
// refusals (429s; 529 and 503 overloads counted apart).
type RateLimitWaits struct {
	Waits        int64 `json:"waits"`
	WaitedMS     int64 `json:"waited_ms"`
	Provider429s int64 `json:"provider_429s"`
	Overloaded   int64 `json:"overloaded"`
}

// Share is Count out of Of, and their quotient when Of is not 0.
type Share struct {
	Count int64    `json:"count"`
	Of    int64    `json:"of"`
	Share *float64 `json:"share,omitempty"`
}

func (s *Share) add(of, count bool) {
	if of {
		s.Of++
	}
	if count {
		s.Count++
	}
}

func (s *Share) finish() {
	s.Share = nil
	if s.Of > 0 {
		v := float64(s.Count) / float64(s.Of)
		s.Share = &v
	}
}

// PerRound summarizes a ratio measured once per model call.
type PerRound struct {
	Rounds int     `json:"rounds"`
	Mean   float64 `json:"mean"`
	Max    float64 `json:"max"`
}

// MetricsCollector computes Metrics from events, in any order of agents
// (each agent's own events in order). It is safe for concurrent use.
type MetricsCollector struct {
	mu     sync.Mutex
	m      Metrics
	sum    float64         // of the tool-result shares
	rounds map[string]*rnd // by run/agent/attempt/round
	order  []string
}

type rnd struct {
	calls    int
	parallel bool
}

// NewMetricsCollector returns an empty collector.
func NewMetricsCollector() *MetricsCollector {
	return &MetricsCollector{m: Metrics{TokensByKind: map[string]int64{}}, rounds: map[string]*rnd{}}
}

// ComputeMetrics is the metrics of a run's events.
func ComputeMetrics(events []messages.Event) Metrics {
	c := NewMetricsCollector()
	for _, ev := range events {
		c.Apply(ev)
	}
	return c.Metrics()
}

// Apply adds one event. Events of other types, or that do not decode,
// are ignored.
func (c *MetricsCollector) Apply(ev messages.Event) {
	switch ev.Type {
	case messages.EvtToolStarted, messages.EvtToolFinished, messages.EvtLLMResponse, messages.EvtContextCompacted, messages.EvtLLMThrottled:
	default:
		return
	}
	v, err := ev.Decode()
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch d := v.(type) {
	case *messages.ToolStarted:
		c.started(ev, d)
	case *messages.ToolFinished:
		switch d.Tool {
		case "write_file", "edit_file", "apply_patch":
			c.m.BlindWrites.add(true, d.Metadata["blind"] == true)
		}
		c.m.CacheHits.add(d.Cacheable || d.Cached, d.Cached)
	case *messages.LLMResponse:
		c.m.TokensByKind[ev.Kind] += int64(d.TokensIn + d.TokensOut)
		if d.ContextTokens > 0 {
			share := float64(d.ToolResultTokens) / float64(d.ContextTokens)
			r := &c.m.ToolResultShare
			r.Rounds++
			c.sum += share
			r.Max = max(r.Max, share)
		}
	case *messages.ContextCompacted:
		c.m.TokensByKind[ev.Kind] += int64(d.TokensIn + d.TokensOut)
	case *messages.LLMThrottled:
		r := &c.m.RateLimits
		switch {
		case d.Phase == messages.ThrottleResumed:
			r.Waits++
			r.WaitedMS += d.WaitedMS
		case d.Phase == messages.ThrottleRefused && d.Status == 429:
			r.Provider429s++
		case d.Phase == messages.ThrottleRefused:
			r.Overloaded++
		}
	}
}

func (c *MetricsCollector) started(ev messages.Event, d *messages.ToolStarted) {
	key := ev.Run + "/" + ev.Agent + "/" + strconv.Itoa(ev.Attempt) + "/" + strconv.Itoa(d.Round)
	r := c.rounds[key]
	if r == nil {
		r = &rnd{}
		c.rounds[key] = r
		c.order = append(c.order, key)
	}
	r.calls++
	r.parallel = r.parallel || d.Parallel
	switch d.Tool {
	case "shell":
		var a struct {
			Command string `json:"command"`
		}
		_ = json.Unmarshal(d.Args, &a)
		_, fileOp := ShellFileOp(a.Command)
		c.m.ShellFileOps.add(true, fileOp)
	case "grep":
		var a struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(d.Args, &a)
		c.m.GrepFilesMode.add(true, a.Mode == "" || a.Mode == "files")
	}
}

// Metrics returns the metrics of the events applied so far.
func (c *MetricsCollector) Metrics() Metrics {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.m
	m.TokensByKind = make(map[string]int64, len(c.m.TokensByKind))
	for k, v := range c.m.TokensByKind {
		m.TokensByKind[k] = v
	}
	m.ParallelRounds = Share{}
	for _, key := range c.order {
		if r := c.rounds[key]; r.calls >= 2 {
			m.ParallelRounds.add(true, r.parallel)
		}
	}
	if m.ToolResultShare.Rounds > 0 {
		m.ToolResultShare.Mean = c.sum / float64(m.ToolResultShare.Rounds)
	}
	explore, worker := m.TokensByKind["explore"], m.TokensByKind["worker"]
	m.ExploreVsWorker = Share{Count: explore, Of: explore + worker}
	for _, s := range []*Share{&m.ShellFileOps, &m.GrepFilesMode, &m.BlindWrites, &m.CacheHits, &m.ParallelRounds, &m.ExploreVsWorker} {
		s.finish()
	}
	return m
}
