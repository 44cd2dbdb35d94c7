package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/watch"
)

// The scenario of issue 31, in processes: a hub (`serve`, which owns the
// provider quota), two nodes, and two runs started together, each of 24
// sub-agents (12 explore agents on the nodes, 12 planners in the run's
// own process), against a scripted provider that allows 4 requests a
// second, enforced per second. Every figure is a count the provider
// recorded, never a timing of ours.
//
//   - at most 2% of the requests are refused 429;
//   - while both runs are saturating the key, the provider answers at
//     least 85% of its limit;
//   - each run gets 35-65% of the answered requests while both are active;
//   - both runs complete;
//   - when the provider refuses everything for 3 s with retry-after-ms
//     3000, each process sends at most one request in that window, and
//     every process sends again afterwards (headers only: a provider that
//     says nothing gives no retry-after to wait out).
//
// The second case is a provider that sends no headers at all, with the
// limit in every process's config (model.rate_limit).
func TestSharedRateLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	for _, tc := range []struct {
		name   string
		rl     llmtest.RateLimit
		config string
		window bool
	}{
		{"provider headers", llmtest.RateLimit{RPM: 240, TPM: 100_000_000}, "", true},
		{"config, no headers", llmtest.RateLimit{RPM: 240, TPM: 100_000_000, NoHeaders: true}, "model:\n  rate_limit: {default: {rpm: 240}}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) { sharedRateScenario(t, tc.rl, tc.config, tc.window) })
	}
}

const (
	rateChildren = 24 // per run: half explore (on the nodes), half planners (local)
	rateLimit    = 4.0
)

// rateScript: the root delegates 12 explore agents and 12 planners in one
// turn, each of which greps once and answers.
func rateScript(rl llmtest.RateLimit) *llmtest.Server {
	var calls []llmtest.ToolCall
	for i := range rateChildren {
		kind := []string{"explore", "planner"}[i%2]
		args, _ := json.Marshal(map[string]string{"type": kind, "task": fmt.Sprintf("q%d: where is main?", i)})
		calls = append(calls, llmtest.ToolCall{Name: "delegate", Args: args})
	}
	child := []llmtest.Turn{{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"func main"}`)}}},
		{Text: "main.go:3"}}
	// Both runs' roots are "root": a script each, or they would share a
	// cursor.
	return llmtest.New(llmtest.Script{RateLimit: &rl, Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root", TaskContains: "run 0"}, Turns: []llmtest.Turn{{ToolCalls: calls}, {Text: "all answered"}}},
		{Match: llmtest.Matcher{Kind: "root", TaskContains: "run 1"}, Turns: []llmtest.Turn{{ToolCalls: calls}, {Text: "all answered"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: child},
		{Match: llmtest.Matcher{Kind: "planner"}, Turns: child},
	}})
}

func sharedRateScenario(t *testing.T, rl llmtest.RateLimit, config string, window bool) {
	srv := rateScript(rl)
	defer srv.Close()
	env := append(modelEnv(srv), "TROUPE_MODEL=m", "TROUPE_CHEAP_MODEL=m")
	store := t.TempDir()
	serve := start(t, bin.orchestrator, nil, "serve", "--listen", "127.0.0.1:0", "--store", store)
	url := serve.firstLine(30 * time.Second)
	creds := filepath.Join(store, "creds")
	serve.waitStderr("--creds "+firstNodeCreds(creds), 10*time.Second)
	ws := t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))
	userConfig(t, ws, "agent:\n  plan_first: {root: false, planner: false}\n"+
		"  fanout_threshold: 64\nbudget:\n  per_kind: {explore: 64, planner: 64}\n"+config)
	col := collect(t, url, bus.CredsPath(creds, bus.RoleWatcher))
	for i := range 2 {
		name := fmt.Sprintf("box-%d", i)
		issue := start(t, bin.orchestrator, nil, "auth", "node", name, "--dir", creds)
		if code := issue.wait(30 * time.Second); code != 0 {
			t.Fatalf("auth node %s: exit %d\n%s", name, code, issue.errs())
		}
		node := start(t, bin.node, env, "--nats", url, "--creds", strings.TrimSpace(issue.out()), "--workspace", ws,
			"--slots", "12", "--kinds", "explore", "--name", name)
		node.waitStderr(" ready", 30*time.Second)
	}
	var runs [2]*proc
	for i := range runs {
		runs[i] = start(t, bin.orchestrator, env, "run", "--nats", url, "--creds", bus.CredsPath(creds, bus.RoleRequester),
			"--workspace", ws, "--json", "--placement", "explore=remote,planner=local", fmt.Sprintf("find main, run %d", i))
	}
	var w0 time.Time
	if window {
		// Well into the saturation: the provider refuses everything for 3 s.
		poll(t, 90*time.Second, func() error {
			if n := answered(srv.Requests()); n < 36 {
				return fmt.Errorf("%d requests answered", n)
			}
			return nil
		})
		w0 = time.Now()
		srv.RefuseAll(3*time.Second, 3*time.Second)
	}
	var ids [2]string
	var waits watch.RateLimitWaits
	for i, r := range runs {
		res := runJSON(t, r)
		if res.Status != "completed" || res.Text != "all answered" {
			t.Fatalf("run %d: %+v\n%s", i, res, r.errs())
		}
		ids[i] = res.Run
		w := rateWaits(t, r)
		waits.Waits, waits.WaitedMS, waits.Provider429s = waits.Waits+w.Waits, waits.WaitedMS+w.WaitedMS, waits.Provider429s+w.Provider429s
	}
	// 48 agents on a key of 4 requests a second: calls waited, and run
	// --json says so.
	t.Logf("run --json rate_limits, both runs: %+v", waits)
	if waits.Waits == 0 || waits.WaitedMS == 0 {
		t.Errorf("run --json reports no waits for rate: %+v", waits)
	}
	reqs := srv.Requests()
	checkRateFigures(t, reqs, ids, w0)
	if window {
		checkRefusalWindow(t, reqs, col, ids, w0)
	}
}

// rateWaits is the rate_limits of a run's `run --json` metrics.
func rateWaits(t *testing.T, p *proc) watch.RateLimitWaits {
	var out struct {
		Metrics watch.Metrics `json:"metrics"`
	}
	if err := json.Unmarshal([]byte(p.out()), &out); err != nil {
		t.Fatalf("run --json output: %v", err)
	}
	return out.Metrics.RateLimits
}

// answered counts the requests the provider answered 200.
func answered(reqs []llmtest.Recorded) int {
	n := 0
	for _, r := range reqs {
		if r.Status == 200 {
			n++
		}
	}
	return n
}

// checkRateFigures checks the 429s, the throughput while saturated and the
// split between the runs, leaving out the refusal window (from w0 to 4 s
// after it: its 3 s, the retry-after it asked and the jitter).
func checkRateFigures(t *testing.T, reqs []llmtest.Recorded, runs [2]string, w0 time.Time) {
	inWindow := func(at time.Time) bool { return !w0.IsZero() && !at.Before(w0) && at.Before(w0.Add(4*time.Second)) }
	var total, refused int
	var ok [2][]time.Time
	for _, r := range reqs {
		if inWindow(r.Received) {
			continue
		}
		total++
		if r.RateLimited {
			refused++
		}
		if i := slices.Index(runs[:], r.Run); i >= 0 && r.Status == 200 {
			ok[i] = append(ok[i], r.Received)
		}
	}
	t.Logf("%d requests outside the refusal window, %d refused 429 (%.1f%%)", total, refused, 100*float64(refused)/float64(total))
	if refused*50 > total {
		t.Errorf("%d of %d requests refused 429: over 2%%", refused, total)
	}
	// Both runs active: from the later first answer to the earlier last.
	from, to := later(ok[0][0], ok[1][0]), earlier(ok[0][len(ok[0])-1], ok[1][len(ok[1])-1])
	var share [2]int
	for i := range ok {
		for _, at := range ok[i] {
			if !at.Before(from) && !at.After(to) {
				share[i]++
			}
		}
	}
	both := share[0] + share[1]
	t.Logf("both runs active for %v: run 0 got %d, run 1 %d of %d answered requests", to.Sub(from).Round(time.Millisecond), share[0], share[1], both)
	for i, n := range share {
		if n*100 < both*35 || n*100 > both*65 {
			t.Errorf("run %d got %d of %d answered requests while both were active: outside 35-65%%", i, n, both)
		}
	}
	// Saturated: every child has its calls to make. Measured from the
	// tenth answer (the children are started) to the refusal window, or
	// to the last answer a third of the children's calls before the end.
	all := append(append([]time.Time{}, ok[0]...), ok[1]...)
	slices.SortFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	start, end := all[9], all[len(all)-1-len(all)/3]
	if !w0.IsZero() {
		end = w0
	}
	n := 0
	for _, at := range all {
		if !at.Before(start) && at.Before(end) {
			n++
		}
	}
	rate := float64(n) / end.Sub(start).Seconds()
	t.Logf("saturated for %v: %d answered, %.2f/s of a limit of %.0f/s (%.0f%%)", end.Sub(start).Round(time.Millisecond), n, rate, rateLimit, 100*rate/rateLimit)
	if rate < 0.85*rateLimit {
		t.Errorf("throughput while saturated %.2f/s, under 85%% of the limit (%.0f/s)", rate, rateLimit)
	}
}

// checkRefusalWindow: during the 3 s the provider refused everything,
// each process (each run's orchestrator, each node) sent at most one
// request, and each sent again afterwards.
func checkRefusalWindow(t *testing.T, reqs []llmtest.Recorded, col *collector, runs [2]string, w0 time.Time) {
	where := map[string]string{} // run/agent → the node that ran it
	for _, ev := range col.events() {
		if ev.Type == messages.EvtAgentStarted && ev.Node != "" {
			where[ev.Run+"/"+ev.Agent] = ev.Node
		}
	}
	process := func(r llmtest.Recorded) string {
		if n := where[r.Run+"/"+r.Agent]; n != "" {
			return "node " + n
		}
		return "the orchestrator of run " + r.Run
	}
	inWindow, after := map[string]int{}, map[string]int{}
	procs := map[string]bool{}
	for _, r := range reqs {
		p := process(r)
		procs[p] = true
		switch {
		case !r.Received.Before(w0) && r.Received.Before(w0.Add(3*time.Second)):
			inWindow[p]++
		case !r.Received.Before(w0.Add(3*time.Second)) && r.Status == 200:
			after[p]++
		}
	}
	t.Logf("requests in the refusal window by process: %v; answered after it: %v", inWindow, after)
	if len(procs) != 4 {
		t.Errorf("requests came from %d processes, want 4 (2 runs, 2 nodes): %v", len(procs), keys(procs))
	}
	for p := range procs {
		if inWindow[p] > 1 {
			t.Errorf("%s sent %d requests in the 3 s the provider refused everything with retry-after-ms 3000", p, inWindow[p])
		}
		if after[p] == 0 {
			t.Errorf("%s sent nothing after the refusals ended", p)
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func keys(m map[string]bool) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
