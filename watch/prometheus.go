package watch

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/troupe-ai/troupe/messages"
)

// maxLabelValues bounds how many values one label of one metric takes
// (models, tools and kinds all come from the wire); later values are
// counted under "other", so a run with a thousand made-up tool names
// cannot blow up a Prometheus server. No label names a run or an agent:
// those are unbounded, and per-run figures live in the web view, `run
// --json` and the traces.
const maxLabelValues = 200

// otherLabel is the label value that collects the values past
// maxLabelValues.
const otherLabel = "other"

// PromOptions configure a PromMetrics.
type PromOptions struct {
	// Stats, when set, is read at each scrape for the task queue's depth
	// and the registry's nodes (a Monitor's Stats): figures it lacks are
	// left out of the scrape.
	Stats func() Stats
}

// PromMetrics turns lifecycle events into Prometheus metrics
// (docs/metrics.md lists them). Feed it with Apply, in any order of
// agents (each agent's own events in order), from a run's emitter or a
// subscription to the events stream; serve it with Handler. It is safe
// for concurrent use.
type PromMetrics struct {
	reg *prometheus.Registry

	tokens, cost       *prometheus.CounterVec
	agents             *prometheus.GaugeVec
	agentsEnded        *prometheus.CounterVec
	toolCalls          *prometheus.CounterVec
	toolSeconds        *prometheus.HistogramVec
	modelSeconds       *prometheus.HistogramVec
	budgetWaits        *prometheus.CounterVec
	rateWait, rate429  *prometheus.CounterVec
	redeliveries       *prometheus.CounterVec
	events, dropped    *prometheus.CounterVec
	runs, runsFinished *prometheus.CounterVec
	mu                 sync.Mutex
	live               liveAgents
	seen               map[string]map[string]struct{}
}

// NewPromMetrics returns metrics with nothing counted yet.
func NewPromMetrics(o PromOptions) *PromMetrics {
	m := &PromMetrics{reg: prometheus.NewRegistry(), live: liveAgents{runs: map[string]*liveRun{}, finished: map[string]struct{}{}}, seen: map[string]map[string]struct{}{}}
	cv := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		m.reg.MustRegister(c)
		return c
	}
	m.tokens = cv("troupe_tokens_total", "Model tokens used, by agent kind, model and direction (input, output).", "kind", "model", "direction")
	m.cost = cv("troupe_cost_dollars_total", "Dollars spent on model calls, by agent kind and model (priced models only).", "kind", "model")
	m.agentsEnded = cv("troupe_agents_ended_total", "Agents that ended, by kind and status (completed, failed, cancelled).", "kind", "status")
	m.toolCalls = cv("troupe_tool_calls_total", "Tool calls that ended, by tool and outcome (ok, error, cached).", "tool", "outcome")
	m.budgetWaits = cv("troupe_budget_waits_total", "Budget acquires that had to wait, by agent kind and reason.", "kind", "reason")
	m.rateWait = cv("troupe_rate_limit_wait_seconds_total", "Seconds model calls waited for their turn under the hub's shared provider rate limits, by model.", "model")
	m.rate429 = cv("troupe_provider_429_total", "429 answers from model providers, by model.", "model")
	m.redeliveries = cv("troupe_task_redeliveries_total", "Agent tasks delivered to a node again, by kind.", "kind")
	m.events = cv("troupe_events_total", "Lifecycle events received, by type.", "type")
	m.dropped = cv("troupe_events_dropped_total", "Events the runs' publishers could not publish (reported in run.finished).", "kind")
	m.runs = cv("troupe_runs_started_total", "Runs started.", "kind")
	m.runsFinished = cv("troupe_runs_finished_total", "Runs finished, by status.", "status")
	m.agents = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "troupe_agents", Help: "Agents not yet ended, by kind and status (spawned, running, waiting, throttled)."}, []string{"kind", "status"})
	m.toolSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "troupe_tool_call_duration_seconds",
		Help: "Wall time of tool calls, by tool.", Buckets: []float64{.001, .005, .025, .1, .5, 2.5, 10, 60, 300}}, []string{"tool"})
	m.modelSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "troupe_model_call_duration_seconds",
		Help: "Wall time of model calls (retries included), by model.", Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}}, []string{"model"})
	m.reg.MustRegister(m.agents, m.toolSeconds, m.modelSeconds)
	if o.Stats != nil {
		m.reg.MustRegister(newStatsCollector(o.Stats))
	}
	return m
}

// Registry is the registry the metrics live in, to add collectors to or
// gather from.
func (m *PromMetrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in Prometheus' text (or OpenMetrics) format.
func (m *PromMetrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// label bounds the values of one label: past maxLabelValues distinct
// values, the rest are otherLabel. Called with m.mu held.
func (m *PromMetrics) label(name, v string) string {
	if v == "" {
		return "none"
	}
	s := m.seen[name]
	if s == nil {
		s = map[string]struct{}{}
		m.seen[name] = s
	}
	if _, ok := s[v]; ok {
		return v
	}
	if len(s) >= maxLabelValues {
		return otherLabel
	}
	s[v] = struct{}{}
	return v
}

// Apply counts one event. Events that do not decode count only in
// troupe_events_total.
func (m *PromMetrics) Apply(ev messages.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	typ := ev.Type
	if _, ok := messages.LookupEvent(typ); !ok {
		typ = otherLabel
	}
	m.events.WithLabelValues(typ).Inc()
	if ev.Type == messages.EvtLLMDelta {
		return
	}
	v, err := ev.Decode()
	if err != nil {
		return
	}
	kind := m.label("kind", ev.Kind)
	switch d := v.(type) {
	case *messages.LLMResponse:
		m.tokensOf(kind, d.Model, d.TokensIn, d.TokensOut, d.CostUSD)
		m.modelSeconds.WithLabelValues(m.label("model", d.Model)).Observe(float64(d.DurationMS) / 1000)
	case *messages.ContextCompacted:
		m.tokensOf(kind, d.Model, d.TokensIn, d.TokensOut, d.CostUSD)
	case *messages.ToolFinished:
		outcome := "ok"
		switch {
		case d.Cached:
			outcome = "cached"
		case d.IsError:
			outcome = "error"
		}
		tool := m.label("tool", d.Tool)
		m.toolCalls.WithLabelValues(tool, outcome).Inc()
		m.toolSeconds.WithLabelValues(tool).Observe(d.DurationMS / 1000)
	case *messages.BudgetWaiting:
		m.budgetWaits.WithLabelValues(m.label("kind", d.Kind), m.label("reason", d.Reason)).Inc()
		m.setStatus(ev, d.Agent, m.label("kind", d.Kind), "waiting")
	case *messages.LLMThrottled:
		m.throttled(ev, kind, d)
	case *messages.TaskRedelivered:
		m.redeliveries.WithLabelValues(m.label("kind", d.Kind)).Inc()
	case *messages.AgentSpawned:
		m.setStatus(ev, d.Child, m.label("kind", d.Kind), "spawned")
	case *messages.AgentStarted, *messages.RoundStarted:
		m.setStatus(ev, ev.Agent, kind, StatusRunning)
	case *messages.AgentEnded:
		m.ended(ev, kind, d.Status)
	case *messages.RunStarted:
		m.runs.WithLabelValues("run").Inc()
	case *messages.RunFinished:
		m.runsFinished.WithLabelValues(m.label("status", d.Status)).Inc()
		m.dropped.WithLabelValues("publish").Add(float64(d.EventsDropped))
		m.runFinished(ev.Run)
	}
}

// throttled counts an llm.throttled event: its wait, its 429, and the
// agent's status (throttled while it waits for its turn).
func (m *PromMetrics) throttled(ev messages.Event, kind string, d *messages.LLMThrottled) {
	model := m.label("model", d.Model)
	switch d.Phase {
	case messages.ThrottleWaiting:
		m.setStatus(ev, ev.Agent, kind, StatusThrottled)
	case messages.ThrottleResumed:
		m.rateWait.WithLabelValues(model).Add(float64(d.WaitedMS) / 1000)
		m.setStatus(ev, ev.Agent, kind, StatusRunning)
	case messages.ThrottleRefused:
		if d.Status == 429 {
			m.rate429.WithLabelValues(model).Inc()
		}
	}
}

func (m *PromMetrics) tokensOf(kind, model string, in, out int, cost float64) {
	model = m.label("model", model)
	m.tokens.WithLabelValues(kind, model, "input").Add(float64(in))
	m.tokens.WithLabelValues(kind, model, "output").Add(float64(out))
	if cost > 0 {
		m.cost.WithLabelValues(kind, model).Add(cost)
	}
}
