package watch

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/troupe-ai/troupe/messages"
)

// An agent waiting for its turn with the provider's rate limits shows
// throttled in the tree and in troupe_agents; its wait and the 429 that
// caused it count in the run's metrics and in Prometheus.
func TestThrottledAgent(t *testing.T) {
	s := &stream{t: t}
	s.add("root", "root", messages.EvtAgentStarted, messages.AgentStarted{Task: "t"})
	s.add("root", "root", messages.EvtRoundStarted, messages.RoundStarted{Round: 1, Model: "m1"})
	s.add("root", "root", messages.EvtLLMThrottled, messages.LLMThrottled{Round: 1, Model: "m1", Phase: messages.ThrottleRefused, Status: 429, RetryAfterMS: 3000, Attempt: 1})
	s.add("root", "root", messages.EvtLLMThrottled, messages.LLMThrottled{Round: 1, Model: "m1", Phase: messages.ThrottleWaiting, Reason: "frozen", Status: 429, FrozenMS: 2990, Attempt: 2})
	tr := NewTree(10)
	m := NewPromMetrics(PromOptions{})
	for _, ev := range s.events {
		tr.Apply(ev)
		m.Apply(ev)
	}
	root := func() *Agent { r := tr.Runs()[0]; return r.Agents["root"] }
	if got := root().Status; got != StatusThrottled {
		t.Fatalf("status %q, want throttled", got)
	}
	if got := testutil.ToFloat64(m.agents.WithLabelValues("root", "throttled")); got != 1 {
		t.Errorf("troupe_agents throttled = %v", got)
	}
	s.events = nil
	s.add("root", "root", messages.EvtLLMThrottled, messages.LLMThrottled{Round: 1, Model: "m1", Phase: messages.ThrottleResumed, WaitedMS: 3250, Attempt: 2})
	tr.Apply(s.events[0])
	m.Apply(s.events[0])
	if a := root(); a.Status != StatusRunning || a.ThrottledMS != 3250 || a.Provider429s != 1 {
		t.Errorf("after resuming: %+v", *a)
	}
	if got := testutil.ToFloat64(m.rateWait.WithLabelValues("m1")); got != 3.25 {
		t.Errorf("troupe_rate_limit_wait_seconds_total = %v", got)
	}
	if got := testutil.ToFloat64(m.rate429.WithLabelValues("m1")); got != 1 {
		t.Errorf("troupe_provider_429_total = %v", got)
	}
	all := append([]messages.Event{}, s.events...)
	got := ComputeMetrics(append(promRun(t), all...)).RateLimits
	if got.Waits != 1 || got.WaitedMS != 3250 {
		t.Errorf("run metrics %+v", got)
	}
}
