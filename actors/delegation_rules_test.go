package actors_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// panicky is a user-supplied emitter with a bug: it panics on an explore
// agent's first round, inside that agent's Receive.
type panicky struct{ rec *actors.Recorder }

func (p panicky) Emit(ev messages.Event) {
	p.rec.Emit(ev)
	if ev.Kind == actors.KindExplore && ev.Type == messages.EvtRoundStarted {
		panic("emitter bug")
	}
}

func TestChildPanicBecomesErrorResult(t *testing.T) {
	rec := &actors.Recorder{}
	srv := llmtest.New(script(
		kind("root", calls(delegate("explore", "look around", false)), say("carried on after the crash")),
		kind("explore", say("unreachable")),
	))
	defer srv.Close()
	o := options(t, srv, workspace(t, fixtureRepo), "explore", rec)
	o.Events = panicky{rec}
	res := run(t, o)
	if res.Status != actors.StatusCompleted || res.Text != "carried on after the crash" {
		t.Fatalf("root %+v", res.AgentResult)
	}
	r := lastTool(requestsOf(srv, "root")[1])
	if !strings.Contains(r, "Status: failed") || !strings.Contains(r, "agent crashed: emitter bug") {
		t.Errorf("delegate result after the child's panic: %q", r)
	}
	if res.Budget == nil || res.Budget.Slots != 0 || res.Budget.Reserved != 0 {
		t.Errorf("crashed child's lease not returned: %+v", res.Budget)
	}
}

func TestCancelRootStopsEveryDescendant(t *testing.T) {
	rec := &actors.Recorder{}
	var arrived atomic.Int32 // explore requests that reached the server
	slow := llmtest.Turn{Dynamic: func(llmtest.Recorded) llmtest.Turn {
		arrived.Add(1)
		return llmtest.Turn{Text: "never", Latency: llmtest.Duration(5 * time.Minute)}
	}}
	srv := llmtest.New(script(
		kind("root", calls(delegate("explore", "a", true), delegate("explore", "b", true), delegate("explore", "c", true), delegate("explore", "d", false))),
		kind("explore", slow),
	))
	defer srv.Close()
	team, err := actors.Start(t.Context(), options(t, srv, workspace(t, fixtureRepo), "fan out", rec))
	if err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, func() error {
		if n := arrived.Load(); n != 4 {
			return fmt.Errorf("%d explore requests arrived", n)
		}
		return nil
	})
	team.Cancel()
	res, err := team.Wait(t.Context())
	if err != nil || res.Status != actors.StatusCancelled {
		t.Fatalf("%+v %v", res, err)
	}
	cancelled := map[string]bool{}
	for _, ev := range rec.OfType(messages.EvtAgentCancelled) {
		if ev.Kind == actors.KindExplore {
			cancelled[ev.Agent] = true
		}
	}
	if len(cancelled) != 4 {
		t.Errorf("%d explore agents ended cancelled, want 4", len(cancelled))
	}
	if b := res.Budget; b == nil || b.Slots != 0 || b.Reserved != 0 {
		t.Errorf("leases after cancel: %+v", b)
	}
	checkFor(t, 10*time.Second, func() error {
		if n := srv.InFlight(); n != 0 {
			return fmt.Errorf("%d requests still in flight", n)
		}
		return nil
	})
}

// Kinds are enforced by the actor; workers wait for the execution phase;
// only the root delegates by default.
func TestDelegationRules(t *testing.T) {
	rec := &actors.Recorder{}
	srv := llmtest.New(script(
		kind("root",
			calls(delegate("worker", "too early", false), delegate("wizard", "no such type", false), delegate("explore", "try to edit", false)),
			say("ok")),
		kind("explore",
			calls(tc("edit_file", `{"path":"README.md","old_string":"app","new_string":"hacked"}`), tc("delegate", `{"type":"explore","task":"nested"}`)),
			say("could not edit")),
	))
	defer srv.Close()
	res := run(t, options(t, srv, workspace(t, fixtureRepo), "rules", rec))
	if res.Text != "ok" {
		t.Fatalf("%+v", res.AgentResult)
	}
	out := toolResults(requestsOf(srv, "root")[1])
	if len(out) != 3 {
		t.Fatalf("results %q", out)
	}
	if !strings.Contains(out[0], "worker agents can only be delegated after submit_plan") {
		t.Errorf("worker in planning: %q", out[0])
	}
	if !strings.Contains(out[1], `unknown agent type "wizard"; available: explore, planner, worker`) {
		t.Errorf("unknown type: %q", out[1])
	}
	ex := requestsOf(srv, "explore")
	refused := toolResults(ex[1])
	if len(refused) != 2 || !strings.Contains(refused[0], `tool "edit_file" is not allowed for explore agents; allowed tools: find_files, grep, list_dir, read_file, think`) ||
		!strings.Contains(refused[1], `tool "delegate" is not allowed for explore agents`) {
		t.Errorf("explore's forbidden calls: %q", refused)
	}
	if has(ex[0].Tools, "delegate") || has(ex[0].Tools, "edit_file") {
		t.Errorf("explore was offered %s", toolNames(ex[0]))
	}
}

// A fan-out over the threshold emits spawn.plan; the deny policy refuses it.
func TestFanoutOverThresholdDenied(t *testing.T) {
	rec := &actors.Recorder{}
	var many []llmtest.ToolCall
	for i := range 3 {
		many = append(many, delegate("explore", fmt.Sprintf("part %d", i), false))
	}
	srv := llmtest.New(script(kind("root", calls(many...), say("fine, fewer then"))))
	defer srv.Close()
	o := options(t, srv, workspace(t, fixtureRepo), "fan out", rec)
	o.Settings.FanoutThreshold, o.Settings.FanoutPolicy = 2, actors.PolicyDeny
	res := run(t, o)
	if res.Text != "fine, fewer then" {
		t.Fatalf("%+v", res.AgentResult)
	}
	plan := rec.OfType(messages.EvtSpawnPlan)
	if len(plan) != 1 || dataOf(t, plan[0])["count"] != 3.0 || dataOf(t, plan[0])["estimated_tokens"] != 180000.0 {
		t.Fatalf("spawn.plan events: %v", plan)
	}
	for _, r := range toolResults(requestsOf(srv, "root")[1]) {
		if !strings.Contains(r, "fan-out refused: this turn starts 3 agents, over the limit of 2") {
			t.Errorf("result %q", r)
		}
	}
	if len(requestsOf(srv, "explore")) != 0 {
		t.Error("explore agents ran despite the deny policy")
	}
}

// Explore agents reading the same files share the run's cache.
func TestExploreAgentsShareTheCache(t *testing.T) {
	rec := &actors.Recorder{}
	srv := llmtest.New(script(
		kind("root", calls(delegate("explore", "one", false)), calls(delegate("explore", "two", false)), say("done")),
		kind("explore", calls(tc("read_file", `{"path":"internal/db/db.go"}`)), say("db.go:4 opens it")),
	))
	defer srv.Close()
	res := run(t, options(t, srv, workspace(t, fixtureRepo), "twice", rec))
	if res.Text != "done" {
		t.Fatalf("%+v", res.AgentResult)
	}
	var cached []bool
	for _, ev := range rec.OfType(messages.EvtToolFinished) {
		if ev.Kind == actors.KindExplore {
			cached = append(cached, dataOf(t, ev)["cached"] == true)
		}
	}
	if len(cached) != 2 || cached[0] || !cached[1] {
		t.Errorf("cached flags of the two explore reads: %v", cached)
	}
}

// An exhausted budget gives the agent one final round with the wrap-up
// advisory, then ends it with what it has.
func TestBudgetExhaustedWrapsUp(t *testing.T) {
	usage := &llmtest.Usage{PromptTokens: 600, CompletionTokens: 100}
	turn := func(tc llmtest.ToolCall) llmtest.Turn {
		return llmtest.Turn{Text: "partial", ToolCalls: []llmtest.ToolCall{tc}, Usage: usage}
	}
	srv := llmtest.New(script(kind("root",
		turn(tc("think", `{"thought":"1"}`)), turn(tc("think", `{"thought":"2"}`)),
		turn(tc("think", `{"thought":"3"}`)), turn(tc("think", `{"thought":"4"}`)),
	)))
	defer srv.Close()
	o := options(t, srv, workspace(t, nil), "spend", &actors.Recorder{})
	o.Settings = noPlan()
	o.Settings.TopUp = 1
	o.Budget.Tokens = 1000
	res := run(t, o)
	if res.Reason != actors.ReasonBudgetExhausted || res.Text != "partial" {
		t.Fatalf("%+v", res.AgentResult)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (two rounds, then the final one)", len(reqs))
	}
	last := reqs[2].Messages[len(reqs[2].Messages)-1]
	if last.Role != "user" || !strings.Contains(last.Content, "token budget is exhausted") {
		t.Errorf("final round lacks the wrap-up advisory: %+v", last)
	}
}

// A parent whose lease is mostly lent to a running child is not out of
// budget: the child's unused reservation comes back.
func TestLentBudgetIsNotExhaustion(t *testing.T) {
	var srv *llmtest.Server
	rootAnswered := func(n int) bool { return len(requestsOf(srv, "root")) >= n }
	srv = llmtest.New(script(
		kind("root",
			calls(delegate("explore", "background look", true)),
			llmtest.Turn{Usage: &llmtest.Usage{PromptTokens: 15_000, CompletionTokens: 100},
				Dynamic: func(req llmtest.Recorded) llmtest.Turn {
					return llmtest.Turn{Usage: &llmtest.Usage{PromptTokens: 15_000, CompletionTokens: 100},
						ToolCalls: []llmtest.ToolCall{tc("check_agent", fmt.Sprintf(`{"agent_id":%q,"block":true}`, backgroundIDs(req)[0]))}}
				}},
			say("finished with the child's answer")),
		kind("explore", llmtest.Turn{Dynamic: func(llmtest.Recorded) llmtest.Turn {
			for !rootAnswered(2) { // hold the lease until the root's big round is charged
				<-time.After(time.Millisecond)
			}
			return say("found it")
		}}),
	))
	defer srv.Close()
	o := options(t, srv, workspace(t, fixtureRepo), "lend", &actors.Recorder{})
	o.Budget.Tokens = 70_000 // explore reserves 60k of it
	res := run(t, o)
	if res.Reason != actors.ReasonFinished || res.Text != "finished with the child's answer" {
		t.Fatalf("%+v", res.AgentResult)
	}
	for _, r := range requestsOf(srv, "root") {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, "token budget is exhausted") {
				t.Fatalf("root told to wrap up while its tokens were only lent: round %d", r.Round)
			}
		}
	}
}

// Nesting depth: by default only the root delegates; max_depth 2 lets a
// delegating kind start children of its own, and no deeper.
func TestDelegationDepthLimit(t *testing.T) {
	lead := actors.Kind{Name: "lead", Description: "leads a sub-team", ReadOnly: true, MayDelegate: true,
		Tools: []string{"check_agent", "delegate", "read_file", "think"}, ModelRole: llm.RoleParent}
	for _, depth := range []int{1, 2} {
		t.Run(fmt.Sprint("max_depth=", depth), func(t *testing.T) {
			srv := llmtest.New(script(
				kind("root", calls(delegate("lead", "lead the exploration", false)), say("root done")),
				kind("lead", calls(delegate("explore", "look", false)), say("lead done")),
				kind("explore", calls(delegate("explore", "deeper", false)), say("explore done")),
			))
			defer srv.Close()
			o := options(t, srv, workspace(t, fixtureRepo), "nest", &actors.Recorder{})
			o.Kinds = actors.BuiltinKinds()
			o.Kinds["lead"] = lead
			o.Settings.MaxDepth = depth
			if res := run(t, o); res.Text != "root done" {
				t.Fatalf("%+v", res.AgentResult)
			}
			leadReqs := requestsOf(srv, "lead")
			got := lastTool(leadReqs[1])
			explores := requestsOf(srv, "explore")
			if depth == 1 {
				if has(leadReqs[0].Tools, "delegate") || !strings.Contains(got, `tool "delegate" is not allowed for lead agents`) || len(explores) != 0 {
					t.Errorf("depth 1: lead tools %s, result %q, %d explore requests", toolNames(leadReqs[0]), got, len(explores))
				}
				return
			}
			if !has(leadReqs[0].Tools, "delegate") || !strings.Contains(got, "explore done") {
				t.Errorf("depth 2: lead tools %s, result %q", toolNames(leadReqs[0]), got)
			}
			// The grandchild is at the limit: it gets no delegation.
			if len(explores) != 2 || !strings.Contains(lastTool(explores[1]), `tool "delegate" is not allowed for explore agents`) {
				t.Errorf("depth 2: explore requests %d, result %q", len(explores), lastTool(explores[len(explores)-1]))
			}
		})
	}
}

// A child that finds no free slot waits in line: the wait is an event, not
// an error, and it runs once the first child's lease comes back.
func TestBudgetWaitIsAnEvent(t *testing.T) {
	rec := &actors.Recorder{}
	waiting := func() bool { return len(rec.OfType(messages.EvtBudgetWaiting)) > 0 }
	var first atomic.Bool
	srv := llmtest.New(script(
		kind("root", calls(delegate("explore", "one", false), delegate("explore", "two", false)), say("both done")),
		kind("explore", llmtest.Turn{Dynamic: func(llmtest.Recorded) llmtest.Turn {
			if first.CompareAndSwap(false, true) {
				for !waiting() { // hold the only explore slot until the other queues
					<-time.After(time.Millisecond)
				}
			}
			return say("found it")
		}}),
	))
	defer srv.Close()
	o := options(t, srv, workspace(t, fixtureRepo), "queue", rec)
	o.Budget.PerKind = map[string]int{"explore": 1}
	res := run(t, o)
	if res.Text != "both done" {
		t.Fatalf("%+v", res.AgentResult)
	}
	for _, r := range toolResults(requestsOf(srv, "root")[1]) {
		if !strings.Contains(r, "Status: completed") || !strings.Contains(r, "found it") {
			t.Errorf("child result %q", r)
		}
	}
	w := rec.OfType(messages.EvtBudgetWaiting)
	if len(w) != 1 || w[0].Agent != actors.RootAgentID || !strings.Contains(string(w[0].Data), "slots") {
		t.Errorf("budget.waiting events: %v", w)
	}
}

// A read-only kind that may delegate keeps its whole sub-tree read-only:
// started while the root plans, it cannot start a worker that would edit
// files before the plan exists.
func TestReadOnlyKindDelegatesOnlyReadOnly(t *testing.T) {
	lead := actors.Kind{Name: "lead", Description: "leads a sub-team", ReadOnly: true, MayDelegate: true,
		Tools: []string{"check_agent", "delegate", "read_file", "think"}, ModelRole: llm.RoleParent}
	srv := llmtest.New(script(
		kind("root", calls(delegate("lead", "lead the exploration", false)), say("root done")),
		kind("lead", calls(delegate("worker", "edit main.go", false), delegate("explore", "look", false)), say("lead done")),
		kind("explore", say("explore done")),
	))
	defer srv.Close()
	o := options(t, srv, workspace(t, fixtureRepo), "ro-tree", &actors.Recorder{})
	o.Kinds = actors.BuiltinKinds()
	o.Kinds["lead"] = lead
	o.Settings.MaxDepth = 2
	if res := run(t, o); res.Text != "root done" {
		t.Fatalf("%+v", res.AgentResult)
	}
	results := toolResults(requestsOf(srv, "lead")[1])
	if len(results) != 2 || !strings.Contains(results[0], "lead agents are read-only and can delegate only read-only types") ||
		!strings.Contains(results[1], "explore done") {
		t.Fatalf("lead's results: %q", results)
	}
	if n := len(requestsOf(srv, "worker")); n != 0 {
		t.Fatalf("a worker ran under a read-only lead (%d requests)", n)
	}
}

// A kind that says read_only but lists a tool that changes files is a
// configuration error, named before the run starts.
func TestReadOnlyKindWithMutatingToolRefused(t *testing.T) {
	srv := llmtest.New(script(kind("root", say("never"))))
	defer srv.Close()
	o := options(t, srv, workspace(t, fixtureRepo), "ro-bad", &actors.Recorder{})
	o.Kinds = actors.BuiltinKinds()
	o.Kinds["sneaky"] = actors.Kind{Name: "sneaky", Description: "says read-only", ReadOnly: true,
		Tools: []string{"read_file", "write_file"}, ModelRole: llm.RoleParent}
	_, err := actors.Run(t.Context(), o)
	if err == nil || !strings.Contains(err.Error(), "kind sneaky: read_only, but its tool write_file changes files") {
		t.Fatalf("err = %v", err)
	}
}
