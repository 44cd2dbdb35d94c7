package watch

import (
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// maxLiveRuns bounds the runs whose live agents PromMetrics keeps: past
// it, the run heard from least recently is dropped from troupe_agents (a
// run whose orchestrator died never sends run.finished).
const maxLiveRuns = 1000

// liveAgents are the agents not yet ended, by run, for troupe_agents,
// and the runs that finished lately (the events of a run's agents on
// nodes may come after its run.finished: they start nothing).
type liveAgents struct {
	runs     map[string]*liveRun
	finished map[string]struct{}
	order    []string // of finished, oldest first
}

// liveRun is one run's agents not yet ended and its latest event's time.
type liveRun struct {
	agents map[string]*liveAgent
	last   time.Time
}

// liveAgent is what PromMetrics keeps of an agent until it ends.
type liveAgent struct {
	kind, status string
}

// setStatus moves agent of ev's run to status, counting it in
// troupe_agents. Called with m.mu held.
func (m *PromMetrics) setStatus(ev messages.Event, agent, kind, status string) {
	if _, done := m.live.finished[ev.Run]; done {
		return
	}
	r := m.liveRun(ev)
	a := r.agents[agent]
	if a == nil {
		a = &liveAgent{kind: kind}
		r.agents[agent] = a
	} else {
		if a.status == status {
			return
		}
		m.leave(a)
	}
	a.status = status
	m.agents.WithLabelValues(a.kind, status).Inc()
}

// liveRun is ev's run's entry, made when missing (dropping the least
// recent run past maxLiveRuns).
func (m *PromMetrics) liveRun(ev messages.Event) *liveRun {
	r := m.live.runs[ev.Run]
	if r == nil {
		if len(m.live.runs) >= maxLiveRuns {
			m.dropStalest()
		}
		r = &liveRun{agents: map[string]*liveAgent{}}
		m.live.runs[ev.Run] = r
	}
	if ev.Time.After(r.last) {
		r.last = ev.Time
	}
	return r
}

func (m *PromMetrics) dropStalest() {
	var oldest string
	var at time.Time
	for id, r := range m.live.runs {
		if oldest == "" || r.last.Before(at) {
			oldest, at = id, r.last
		}
	}
	m.runEnded(oldest)
}

// leave takes a live agent out of the gauge of its current status.
func (m *PromMetrics) leave(a *liveAgent) {
	if a.status != "" {
		m.agents.WithLabelValues(a.kind, a.status).Dec()
	}
}

// ended counts ev's agent as ended with status.
func (m *PromMetrics) ended(ev messages.Event, kind, status string) {
	if r := m.live.runs[ev.Run]; r != nil {
		if a := r.agents[ev.Agent]; a != nil {
			m.leave(a)
			kind = a.kind
			delete(r.agents, ev.Agent)
		}
	}
	m.agentsEnded.WithLabelValues(kind, m.label("status", status)).Inc()
}

// runFinished forgets run's agents and remembers it finished.
func (m *PromMetrics) runFinished(run string) {
	m.runEnded(run)
	if _, ok := m.live.finished[run]; ok {
		return
	}
	if len(m.live.order) >= maxLiveRuns {
		delete(m.live.finished, m.live.order[0])
		m.live.order = m.live.order[1:]
	}
	m.live.finished[run] = struct{}{}
	m.live.order = append(m.live.order, run)
}

// runEnded forgets run's agents: once the run has finished none of them
// runs, whether or not its end reached us.
func (m *PromMetrics) runEnded(run string) {
	r := m.live.runs[run]
	if r == nil {
		return
	}
	for _, a := range r.agents {
		m.leave(a)
	}
	delete(m.live.runs, run)
}
