package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

var fixtureRepo = map[string]string{
	"cmd/app/main.go":       "package main\n\nfunc main() { serve() }\n",
	"internal/api/api.go":   "package api\n\n// Serve starts the HTTP API.\nfunc Serve() {}\n",
	"internal/db/db.go":     "package db\n\n// Open opens the database.\nfunc Open() {}\n",
	"internal/auth/auth.go": "package auth\n\n// Check verifies a token.\nfunc Check(tok string) bool { return tok != \"\" }\n",
	"README.md":             "# app\n",
}

// barrier releases its waiters once n have arrived, or fails them after a
// generous timeout (which the test then reports as "not concurrent").
type barrier struct {
	mu      sync.Mutex
	n       int
	arrived int
	open    chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, open: make(chan struct{})} }

func (b *barrier) wait() bool {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.open)
	}
	b.mu.Unlock()
	select {
	case <-b.open:
		return true
	case <-time.After(20 * time.Second):
		return false
	}
}

var agentIDRE = regexp.MustCompile(`agent_id=([a-z]+-[0-9a-f]{8})`)

// backgroundIDs finds the IDs of background agents in the tool results the
// root was sent, in call order.
func backgroundIDs(req llmtest.Recorded) []string {
	var ids []string
	for _, m := range req.Messages {
		if m.Role == "tool" && strings.HasPrefix(m.Content, "Started agent") {
			ids = append(ids, agentIDRE.FindStringSubmatch(m.Content)[1])
		}
	}
	return ids
}

func delegate(typ, task string, background bool) llmtest.ToolCall {
	b, _ := json.Marshal(map[string]any{"type": typ, "task": task, "background": background})
	return tc("delegate", string(b))
}

func TestDelegationEndToEnd(t *testing.T) {
	ws := workspace(t, fixtureRepo)
	rec := &actors.Recorder{}
	exploreBarrier := newBarrier(4)
	steered := func() bool {
		for _, ev := range rec.OfType(messages.EvtToolFinished) {
			if ev.Agent == actors.RootAgentID && strings.Contains(string(ev.Data), `"tool":"send_input"`) {
				return true
			}
		}
		return false
	}
	root := kind("root",
		// 1 (planning): four explore agents at once.
		calls(delegate("explore", "Where is the HTTP API started?", false), delegate("explore", "How is the database opened?", false),
			delegate("explore", "How are tokens checked?", false), delegate("explore", "What does main do?", false)),
		// 2: a planner.
		calls(delegate("planner", "Plan: make Check reject short tokens", false)),
		// 3: accept a plan of our own.
		calls(tc("submit_plan", `{"summary":"Harden auth.","steps":[{"title":"Reject short tokens","files":["internal/auth/auth.go"],"agent":"worker"}]}`)),
		// 4 (executing): a worker edits a file.
		calls(delegate("worker", "edit-task: make Check reject tokens shorter than 8", false)),
		// 5: two background workers.
		calls(delegate("worker", "bg-steer: add a doc comment", true), delegate("worker", "bg-cancel: slow task", true)),
		// 6: poll one, steer it, cancel the other.
		llmtest.Turn{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			ids := backgroundIDs(req)
			if len(ids) != 2 {
				return say(fmt.Sprintf("expected 2 background agents, saw %v", ids))
			}
			return calls(tc("check_agent", fmt.Sprintf(`{"agent_id":%q}`, ids[0])),
				tc("send_input", fmt.Sprintf(`{"agent_id":%q,"message":"also mention the 8-char rule"}`, ids[0])),
				tc("cancel_agent", fmt.Sprintf(`{"agent_id":%q}`, ids[1])))
		}},
		// 7: wait for the steered one.
		llmtest.Turn{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			return calls(tc("check_agent", fmt.Sprintf(`{"agent_id":%q,"block":true,"timeout":60}`, backgroundIDs(req)[0])))
		}},
		say("All done."),
	)
	explore := kind("explore",
		llmtest.Turn{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			if !exploreBarrier.wait() {
				return say("NOT CONCURRENT")
			}
			return calls(tc("grep", `{"pattern":"func"}`))
		}},
		llmtest.Turn{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			return say("Findings for " + req.Task + ": internal/api/api.go:4")
		}},
	)
	planner := kind("planner",
		calls(tc("read_file", `{"path":"internal/auth/auth.go"}`)),
		calls(tc("submit_plan", `{"summary":"Check length in Check.","steps":[{"title":"Require len(tok) >= 8","files":["internal/auth/auth.go"],"agent":"worker"}]}`)),
	)
	editWorker := llmtest.AgentScript{Match: llmtest.Matcher{Kind: "worker", TaskContains: "edit-task"}, Turns: []llmtest.Turn{
		calls(tc("read_file", `{"path":"internal/auth/auth.go"}`), tc("submit_plan", `{"summary":"one edit","steps":[{"title":"edit Check"}]}`)),
		calls(tc("edit_file", `{"path":"internal/auth/auth.go","old_string":"return tok != \"\"","new_string":"return len(tok) >= 8"}`)),
		say("Check now requires 8 characters."),
	}}
	steerWorker := llmtest.AgentScript{Match: llmtest.Matcher{Kind: "worker", TaskContains: "bg-steer"}, Turns: []llmtest.Turn{
		llmtest.Turn{Dynamic: func(llmtest.Recorded) llmtest.Turn {
			for !steered() {
				<-time.After(time.Millisecond)
			}
			return calls(tc("think", `{"thought":"the parent wrote"}`))
		}},
		llmtest.Turn{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			for _, m := range req.Messages {
				if m.Role == "user" && strings.Contains(m.Content, "also mention the 8-char rule") {
					return say("doc comment added, 8-char rule mentioned")
				}
			}
			return say("NEVER STEERED")
		}},
	}}
	cancelWorker := llmtest.AgentScript{Match: llmtest.Matcher{Kind: "worker", TaskContains: "bg-cancel"},
		Turns: []llmtest.Turn{{Text: "too slow", Latency: llmtest.Duration(5 * time.Minute)}}}
	srv := llmtest.New(script(root, explore, planner, editWorker, steerWorker, cancelWorker))
	defer srv.Close()

	res := run(t, options(t, srv, ws, "harden the auth check", rec))
	if res.Status != actors.StatusCompleted || res.Text != "All done." {
		t.Fatalf("root result %+v", res.AgentResult)
	}
	roots := requestsOf(srv, "root")

	// The edit worker's end lists the file it changed; read-only agents
	// list none.
	var editEnds int
	for _, ev := range rec.OfType(messages.EvtAgentFinished) {
		d := dataOf(t, ev)
		switch {
		case ev.Kind == "worker" && strings.HasPrefix(fmt.Sprint(d["text"]), "Check now requires"):
			editEnds++
			if fmt.Sprint(d["changed"]) != "[internal/auth/auth.go]" {
				t.Errorf("edit worker's changed files: %v", d["changed"])
			}
		case ev.Kind == "explore" || ev.Kind == "planner":
			if d["changed"] != nil {
				t.Errorf("%s agent lists changed files: %v", ev.Kind, d["changed"])
			}
		}
	}
	if editEnds != 1 {
		t.Errorf("%d agent.finished events of the edit worker, want 1", editEnds)
	}

	// Four explore agents: concurrent, explore tools only, cheap model.
	explores := requestsOf(srv, "explore")
	agents := map[string]bool{}
	for _, r := range explores {
		agents[r.Agent] = true
		if toolNames(r) != "find_files,grep,list_dir,read_file,think" || r.Model != "small-model" {
			t.Errorf("explore %s: tools %s model %s", r.Agent, toolNames(r), r.Model)
		}
		if r.Reply.Text == "NOT CONCURRENT" {
			t.Errorf("explore %s ran alone: the four requests did not overlap", r.Agent)
		}
	}
	if len(agents) != 4 || len(explores) != 8 {
		t.Fatalf("%d explore agents, %d requests", len(agents), len(explores))
	}
	var firsts []llmtest.Recorded
	for _, r := range explores {
		if r.Round == 1 {
			firsts = append(firsts, r)
		}
	}
	latestStart, earliestEnd := firsts[0].Received, firsts[0].Answered
	for _, r := range firsts {
		if r.Received.After(latestStart) {
			latestStart = r.Received
		}
		if r.Answered.Before(earliestEnd) {
			earliestEnd = r.Answered
		}
	}
	if !latestStart.Before(earliestEnd) {
		t.Errorf("explore requests did not overlap: last arrived %v, first answered %v", latestStart, earliestEnd)
	}
	// The root's second request carries all four results.
	var findings int
	for _, m := range roots[1].Messages {
		if m.Role == "tool" && strings.Contains(m.Content, "Findings for ") && strings.Contains(m.Content, "Status: completed") {
			findings++
		}
	}
	if findings != 4 {
		t.Errorf("root's next request carries %d explore results, want 4", findings)
	}
	// The planner: read-only tools, the parent's model, a validated plan.
	pl := requestsOf(srv, "planner")
	if len(pl) != 2 || has(pl[0].Tools, "edit_file") || !has(pl[0].Tools, "submit_plan") || pl[0].Model != "big-model" {
		t.Errorf("planner requests: %d, tools %s, model %s", len(pl), toolNames(pl[0]), pl[0].Model)
	}
	if last := lastTool(roots[2]); !strings.Contains(last, "Plan: Check length in Check.") || !strings.Contains(last, "1. Require len(tok) >= 8 [worker] (internal/auth/auth.go)") {
		t.Errorf("planner result in root's request: %q", last)
	}
	if !finishedWithPlan(t, rec) {
		t.Error("the planner's agent.finished event has no structured plan")
	}
	// The worker edited the file.
	if b, _ := os.ReadFile(filepath.Join(ws, "internal/auth/auth.go")); !strings.Contains(string(b), "len(tok) >= 8") {
		t.Errorf("worker edit missing: %s", b)
	}
	// Background: polled running, steered, sibling cancelled, steered one finished.
	r7 := roots[6]
	results := toolResults(r7)
	if len(results) != 3 || !strings.Contains(results[0], "Status: running") || !strings.Contains(results[1], "Message queued") || !strings.Contains(results[2], "Status: cancelled") {
		t.Errorf("check/steer/cancel results: %q", results)
	}
	if last := lastTool(roots[7]); !strings.Contains(last, "Status: completed") || !strings.Contains(last, "8-char rule mentioned") {
		t.Errorf("blocking check_agent: %q", last)
	}
	// Every lease came back; costs and tokens are attributed per agent.
	if b := res.Budget; b == nil || b.Slots != 0 || b.Reserved != 0 || len(b.Agents) != 9 {
		t.Errorf("budget after the run: %+v", res.Budget)
	}
	checkSeqs(t, rec.Events())
	spawned := rec.OfType(messages.EvtAgentSpawned)
	if len(spawned) != 8 {
		t.Errorf("%d agent.spawned events, want 8", len(spawned))
	}
}

func lastTool(r llmtest.Recorded) string {
	res := toolResults(r)
	if len(res) == 0 {
		return ""
	}
	return res[len(res)-1]
}

// toolResults are the tool messages after the last assistant message.
func toolResults(r llmtest.Recorded) []string {
	var out []string
	for _, m := range r.Messages {
		switch m.Role {
		case "assistant":
			out = nil
		case "tool":
			out = append(out, m.Content)
		}
	}
	return out
}

func finishedWithPlan(t *testing.T, rec *actors.Recorder) bool {
	for _, ev := range rec.OfType(messages.EvtAgentFinished) {
		if ev.Kind != actors.KindPlanner {
			continue
		}
		var d struct {
			Plan struct {
				Steps []struct {
					Title string   `json:"title"`
					Files []string `json:"files"`
				} `json:"steps"`
			} `json:"plan"`
		}
		if json.Unmarshal(ev.Data, &d) == nil && len(d.Plan.Steps) == 1 && slices.Equal(d.Plan.Steps[0].Files, []string{"internal/auth/auth.go"}) {
			return true
		}
	}
	return false
}

var _ = context.Background
