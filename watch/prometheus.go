package watch

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/troupe-ai/troupe/messages"
)

// maxLabelValues bounds how many values one label of one metric takes
// (runs, models, tools and kinds all come from the wire); later values
// are counted under "other", so a run with a thousand made-up tool names
// cannot blow up a Prometheus server.
const maxLabelValues = 200

// otherLabel is the label value that collects the values past
// maxLabelValues.
const otherLabel = "other"

// PromOptions configure a PromMetrics.
type PromOptions struct {
	// QueueDepth, when set, is read at each scrape: the agent tasks
	// waiting in the task queue (troupe_queue_depth).
	QueueDepth func() float64
}

// PromMetrics turns lifecycle events into Prometheus metrics
// (docs/metrics.md lists them). Feed it with Apply, in any order of
// agents (each agent's own events in order), from a run's emitter or a
// subscription to the events stream; serve it with Handler. It is safe
// for concurrent use.
type PromMetrics struct {
	reg *prometheus.Registry

	tokens, cost        *prometheus.CounterVec
	agents              *prometheus.GaugeVec
	agentsEnded         *prometheus.CounterVec
	toolCalls           *prometheus.CounterVec
	toolSeconds         *prometheus.HistogramVec
	modelSeconds        *prometheus.HistogramVec
	budgetWaits         *prometheus.CounterVec
	rateWait, rate429   *prometheus.CounterVec
	redeliveries        *prometheus.CounterVec
	nodes, freeSlots    prometheus.Gauge
	events, dropped     *prometheus.CounterVec
	runs, runsFinished  *prometheus.CounterVec
	mu                  sync.Mutex
	live                map[string]*liveAgent // by run/agent: agents not ended
	nodeSlots           map[string]int        // by node ID
	seen                map[string]map[string]struct{}
	busyByNode          map[string]int
	totalSlots, running int
}

// liveAgent is what PromMetrics keeps of an agent until it ends.
type liveAgent struct {
	kind, status, node string
}

// NewPromMetrics returns metrics with nothing counted yet.
func NewPromMetrics(o PromOptions) *PromMetrics {
	m := &PromMetrics{reg: prometheus.NewRegistry(), live: map[string]*liveAgent{}, nodeSlots: map[string]int{},
		seen: map[string]map[string]struct{}{}, busyByNode: map[string]int{}}
	cv := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		m.reg.MustRegister(c)
		return c
	}
	m.tokens = cv("troupe_tokens_total", "Model tokens used, by run, agent kind, model and direction (input, output).", "run", "kind", "model", "direction")
	m.cost = cv("troupe_cost_dollars_total", "Dollars spent on model calls, by run, agent kind and model (priced models only).", "run", "kind", "model")
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
	m.nodes = prometheus.NewGauge(prometheus.GaugeOpts{Name: "troupe_nodes", Help: "Worker nodes joined and not left."})
	m.freeSlots = prometheus.NewGauge(prometheus.GaugeOpts{Name: "troupe_node_free_slots", Help: "Task slots of the joined nodes not taken by a running agent."})
	m.reg.MustRegister(m.agents, m.toolSeconds, m.modelSeconds, m.nodes, m.freeSlots)
	if o.QueueDepth != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "troupe_queue_depth",
			Help: "Agent tasks waiting in the task queue for a node."}, o.QueueDepth))
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
		m.tokensOf(ev.Run, kind, d.Model, d.TokensIn, d.TokensOut, d.CostUSD)
		m.modelSeconds.WithLabelValues(m.label("model", d.Model)).Observe(float64(d.DurationMS) / 1000)
	case *messages.ContextCompacted:
		m.tokensOf(ev.Run, kind, d.Model, d.TokensIn, d.TokensOut, d.CostUSD)
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
		m.setStatus(ev.Run+"/"+d.Agent, m.label("kind", d.Kind), "", "waiting")
	case *messages.LLMThrottled:
		m.throttled(ev, kind, d)
	case *messages.TaskRedelivered:
		m.redeliveries.WithLabelValues(m.label("kind", d.Kind)).Inc()
	case *messages.AgentSpawned:
		m.setStatus(ev.Run+"/"+d.Child, m.label("kind", d.Kind), "", "spawned")
	case *messages.AgentStarted, *messages.RoundStarted:
		m.setStatus(ev.Run+"/"+ev.Agent, kind, ev.Node, StatusRunning)
	case *messages.AgentEnded:
		m.ended(ev.Run+"/"+ev.Agent, kind, d.Status)
	case *messages.RunStarted:
		m.runs.WithLabelValues("run").Inc()
	case *messages.RunFinished:
		m.runsFinished.WithLabelValues(m.label("status", d.Status)).Inc()
		m.dropped.WithLabelValues("publish").Add(float64(d.EventsDropped))
	case *messages.NodeJoined:
		if ev.Run == "nodes" {
			m.nodeJoined(d.Node, d.Slots)
		}
	case *messages.NodeLeft:
		if ev.Run == "nodes" {
			m.nodeLeft(d.Node)
		}
	}
}

// throttled counts an llm.throttled event: its wait, its 429, and the
// agent's status (throttled while it waits for its turn).
func (m *PromMetrics) throttled(ev messages.Event, kind string, d *messages.LLMThrottled) {
	model := m.label("model", d.Model)
	switch d.Phase {
	case messages.ThrottleWaiting:
		m.setStatus(ev.Run+"/"+ev.Agent, kind, ev.Node, StatusThrottled)
	case messages.ThrottleResumed:
		m.rateWait.WithLabelValues(model).Add(float64(d.WaitedMS) / 1000)
		m.setStatus(ev.Run+"/"+ev.Agent, kind, ev.Node, StatusRunning)
	case messages.ThrottleRefused:
		if d.Status == 429 {
			m.rate429.WithLabelValues(model).Inc()
		}
	}
}

func (m *PromMetrics) tokensOf(run, kind, model string, in, out int, cost float64) {
	run, model = m.label("run", run), m.label("model", model)
	m.tokens.WithLabelValues(run, kind, model, "input").Add(float64(in))
	m.tokens.WithLabelValues(run, kind, model, "output").Add(float64(out))
	if cost > 0 {
		m.cost.WithLabelValues(run, kind, model).Add(cost)
	}
}

// setStatus moves a live agent to status, counting it in troupe_agents
// and, when it runs on a known node, against that node's free slots.
func (m *PromMetrics) setStatus(key, kind, node, status string) {
	a := m.live[key]
	if a == nil {
		a = &liveAgent{kind: kind}
		m.live[key] = a
	} else {
		if a.status == status && (node == "" || node == a.node) {
			return
		}
		m.leave(a)
	}
	if node != "" {
		a.node = node
	}
	a.status = status
	m.agents.WithLabelValues(a.kind, status).Inc()
	if status == StatusRunning && a.node != "" {
		m.busyByNode[a.node]++
		m.running++
	}
	m.updateFree()
}

// leave takes a live agent out of the gauges of its current status.
func (m *PromMetrics) leave(a *liveAgent) {
	if a.status == "" {
		return
	}
	m.agents.WithLabelValues(a.kind, a.status).Dec()
	if a.status == StatusRunning && a.node != "" {
		m.busyByNode[a.node]--
		m.running--
	}
}

func (m *PromMetrics) ended(key, kind, status string) {
	if a := m.live[key]; a != nil {
		m.leave(a)
		kind = a.kind
		delete(m.live, key)
	}
	m.agentsEnded.WithLabelValues(kind, m.label("status", status)).Inc()
	m.updateFree()
}

func (m *PromMetrics) nodeJoined(node string, slots int) {
	if old, ok := m.nodeSlots[node]; ok {
		m.totalSlots -= old
	}
	m.nodeSlots[node] = slots
	m.totalSlots += slots
	m.nodes.Set(float64(len(m.nodeSlots)))
	m.updateFree()
}

func (m *PromMetrics) nodeLeft(node string) {
	if old, ok := m.nodeSlots[node]; ok {
		m.totalSlots -= old
		delete(m.nodeSlots, node)
	}
	m.nodes.Set(float64(len(m.nodeSlots)))
	m.updateFree()
}

// updateFree sets troupe_node_free_slots: the joined nodes' slots less
// the agents running on them.
func (m *PromMetrics) updateFree() {
	busy := 0
	for n := range m.nodeSlots {
		busy += m.busyByNode[n]
	}
	m.freeSlots.Set(float64(max(m.totalSlots-busy, 0)))
}
