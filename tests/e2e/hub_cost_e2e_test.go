package e2e

import (
	"os"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/bus"
)

// envHubCost, set to a model's answer time (e.g. "2s"), runs
// TestHubLossCost: a measurement, which tests/bench/hub.sh runs.
const envHubCost = "TROUPE_HUB_COST"

// TestHubLossCost measures what losing servers costs a run whose model
// takes a realistic time to answer: the run of TestHubSurvivesLostServers
// (three `serve --cluster` processes, two nodes, a watcher, 40 remote
// tasks; SIGKILL of the task queue's leader a third of the way through,
// its restart, SIGKILL of another server two thirds through), the same
// with one server down throughout, and with none lost, each explore
// answer taking TROUPE_HUB_COST. It logs the wall times and their ratios
// to the fault-free run; the checks are hubRun's (every result once, no
// task started twice, the watcher's events whole and in order). No
// timing is asserted: the figures go to the README.
func TestHubLossCost(t *testing.T) {
	v := os.Getenv(envHubCost)
	if v == "" {
		t.Skip("a measurement: tests/bench/hub.sh runs it (" + envHubCost + "=2s)")
	}
	latency, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", envHubCost, v, err)
	}
	all := func(p *paced) { p.release(hubTasks) }
	var clean, lost, down time.Duration
	t.Run("fault-free", func(t *testing.T) {
		h := startHub(t)
		h.checkReplicas(h.conn(bus.RoleRequester), true)
		clean = hubRunPaced(t, h, newPaced(latency), all)
	})
	t.Run("two-lost", func(t *testing.T) {
		h := startHub(t)
		req := h.conn(bus.RoleRequester)
		h.checkReplicas(req, true)
		lost = hubRunPaced(t, h, newPaced(latency), func(p *paced) {
			p.release(hubTasks)
			p.waitFinished(t, hubTasks/3)
			first := h.leader(req, req.Names().Tasks)
			h.kill(first)
			p.waitFinished(t, hubTasks/2)
			h.start(first)
			p.waitFinished(t, 2*hubTasks/3)
			second := (first + 1) % 3
			h.kill(second)
		})
	})
	t.Run("one-down", func(t *testing.T) {
		h := startHub(t)
		h.checkReplicas(h.conn(bus.RoleRequester), true)
		h.kill(2)
		down = hubRunPaced(t, h, newPaced(latency), all)
	})
	ratio := func(d time.Duration) float64 { return float64(d) / float64(clean) }
	t.Logf("model answer %v, %d remote tasks: fault-free %v; two servers lost %v (%.2f×); one server down %v (%.2f×)",
		latency, hubTasks, clean.Round(time.Millisecond), lost.Round(time.Millisecond), ratio(lost),
		down.Round(time.Millisecond), ratio(down))
}
