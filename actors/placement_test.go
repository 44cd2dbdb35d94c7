package actors_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// agentChild is a RemoteChild that runs the child with StartAgent in an
// actor system of its own, the way a node runs a task: only the ChildTask
// crosses, the run's budget is reached through budget.Service, and only
// the result comes back.
type agentChild struct {
	t      *testing.T
	srv    *llmtest.Server
	ws     string
	task   actors.ChildTask
	rec    *actors.Recorder
	budget func() budget.Service
	mu     sync.Mutex
	h      *actors.AgentHandle
	ready  chan struct{}
}

func (c *agentChild) Start(ctx context.Context) (actors.AgentResult, error) {
	o := options(c.t, c.srv, c.ws, "", c.rec)
	o.Settings = noPlan()
	o.Node = "node-1"
	host, err := actors.NewHost(ctx, o)
	if err != nil {
		return actors.AgentResult{}, err
	}
	defer host.Close()
	h, err := host.StartAgent(c.task, c.budget(), o.Artifacts)
	if err != nil {
		return actors.AgentResult{}, err
	}
	c.mu.Lock()
	c.h = h
	c.mu.Unlock()
	close(c.ready)
	return h.Wait(ctx), nil
}

func (c *agentChild) handle() *actors.AgentHandle {
	<-c.ready
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.h
}

func (c *agentChild) Status(ctx context.Context) (actors.StatusReply, error) {
	return c.handle().Status(ctx)
}

func (c *agentChild) SendInput(ctx context.Context, message string) (bool, error) {
	return c.handle().SendInput(ctx, message)
}

func (c *agentChild) Cancel(reason string) { c.handle().Cancel(reason) }

// remotePlacer places every child of the given kinds remotely.
type remotePlacer struct {
	t     *testing.T
	srv   *llmtest.Server
	ws    string
	kinds []string
	rec   *actors.Recorder
	team  chan *actors.Team
	mu    sync.Mutex
	kids  map[string]*agentChild
}

func (p *remotePlacer) Place(_ context.Context, task actors.ChildTask) (actors.RemoteChild, error) {
	if !has(p.kinds, task.Kind) {
		return nil, nil
	}
	if task.Run == "" || task.ID == "" || task.Parent != actors.RootAgentID || task.Model == "" || len(task.Tools) == 0 || task.LeaseTokens <= 0 {
		return nil, fmt.Errorf("incomplete task: %+v", task)
	}
	c := &agentChild{t: p.t, srv: p.srv, ws: p.ws, task: task, rec: p.rec, ready: make(chan struct{}),
		budget: func() budget.Service { t := <-p.team; p.team <- t; return t.Budget() }}
	p.mu.Lock()
	p.kids[task.ID] = c
	p.mu.Unlock()
	return c, nil
}

// A Placer that puts explore agents elsewhere changes nothing for the
// parent: delegate returns the remote child's result, check_agent,
// send_input and cancel_agent reach a background remote child through its
// proxy, local children still run here, and every lease comes back.
func TestPlacementRemoteChildren(t *testing.T) {
	ws := workspace(t, fixtureRepo)
	rec, remoteRec := &actors.Recorder{}, &actors.Recorder{}
	bgCalling := make(chan struct{})
	root := kind("root",
		calls(delegate("explore", "remote-q: where is main?", false), delegate("planner", "local-plan: plan it", false)),
		calls(delegate("explore", "remote-bg: slow question", true)),
		llmtest.Turn{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			ids := backgroundIDs(req)
			if len(ids) != 1 {
				return say(fmt.Sprintf("expected 1 background agent, saw %v", ids))
			}
			return calls(tc("check_agent", fmt.Sprintf(`{"agent_id":%q}`, ids[0])),
				tc("send_input", fmt.Sprintf(`{"agent_id":%q,"message":"hurry"}`, ids[0])))
		}},
		llmtest.Turn{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			select { // cancel while the steered agent's next model call runs
			case <-bgCalling:
			case <-time.After(30 * time.Second):
				return say("the background agent never made its second call")
			}
			return calls(tc("cancel_agent", fmt.Sprintf(`{"agent_id":%q}`, backgroundIDs(req)[0])))
		}},
		say("done"),
	)
	remoteQ := llmtest.AgentScript{Match: llmtest.Matcher{TaskContains: "remote-q"}, Turns: []llmtest.Turn{
		calls(tc("grep", `{"pattern":"func main"}`)), say("main is in cmd/app/main.go:3")}}
	steered := make(chan struct{})
	remoteBG := llmtest.AgentScript{Match: llmtest.Matcher{TaskContains: "remote-bg"}, Turns: []llmtest.Turn{
		{Dynamic: func(llmtest.Recorded) llmtest.Turn {
			<-steered
			return calls(tc("think", `{"thought":"steered"}`))
		}},
		{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			for _, m := range req.Messages {
				if m.Role == "user" && strings.Contains(m.Content, "hurry") {
					close(bgCalling)
					return llmtest.Turn{Text: "never", Latency: llmtest.Duration(time.Minute)}
				}
			}
			return say("the steering message is missing")
		}}}}
	planner := llmtest.AgentScript{Match: llmtest.Matcher{Kind: "planner"}, Turns: []llmtest.Turn{
		calls(tc("submit_plan", `{"summary":"s","steps":[{"title":"t"}]}`))}}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{remoteQ, remoteBG, root, planner}})
	defer srv.Close()

	o := options(t, srv, ws, "find things", rec)
	o.Settings = noPlan()
	placer := &remotePlacer{t: t, srv: srv, ws: ws, kinds: []string{"explore"}, rec: remoteRec,
		kids: map[string]*agentChild{}, team: make(chan *actors.Team, 1)}
	o.Placer = placer
	team, err := actors.Start(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	placer.team <- team
	go func() {
		checkFor(t, 30*time.Second, func() error {
			for _, ev := range rec.OfType(messages.EvtToolFinished) {
				if strings.Contains(string(ev.Data), `"tool":"send_input"`) {
					return nil
				}
			}
			return fmt.Errorf("no send_input yet")
		})
		close(steered)
	}()
	res, err := team.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actors.StatusCompleted || res.Text != "done" {
		t.Fatalf("run: %+v", res)
	}
	if len(placer.kids) != 2 {
		t.Fatalf("placed remotely: %d children, want 2", len(placer.kids))
	}
	// The remote child's answer reached the root's next request.
	var seen bool
	for _, m := range requestsOf(srv, "root")[len(requestsOf(srv, "root"))-1].Messages {
		seen = seen || (m.Role == "tool" && strings.Contains(m.Content, "main is in cmd/app/main.go:3"))
	}
	if !seen {
		t.Error("the remote explore agent's result did not reach its parent")
	}
	placements := map[string]string{}
	for _, ev := range rec.OfType(messages.EvtAgentSpawned) {
		d, err := messages.DecodeAs[messages.AgentSpawned](ev)
		if err != nil {
			t.Fatal(err)
		}
		placements[d.Kind+":"+fmt.Sprint(d.Background)] = d.Placement
	}
	if placements["explore:false"] != "remote" || placements["explore:true"] != "remote" || placements["planner:false"] != "local" {
		t.Errorf("placements %v", placements)
	}
	// The remote agents' events carry the run, their own IDs, the parent
	// and the node, and they charged the run's budget.
	for _, ev := range remoteRec.Events() {
		if ev.Run != team.Run() || ev.Parent != actors.RootAgentID || ev.Node != "node-1" || placer.kids[ev.Agent] == nil {
			t.Fatalf("remote event envelope: %+v", ev)
		}
	}
	checkSeqs(t, remoteRec.Events())
	// The background one was steered, then cancelled mid-call.
	var bgReqs []llmtest.Recorded
	for _, r := range srv.Requests() {
		if strings.Contains(r.Task, "remote-bg") {
			bgReqs = append(bgReqs, r)
		}
	}
	if len(bgReqs) != 2 || !bgReqs[1].Canceled {
		t.Errorf("background remote agent: %d requests (want 2, the second cancelled)", len(bgReqs))
	}
	if len(remoteRec.OfType(messages.EvtAgentCancelled)) != 1 || len(remoteRec.OfType(messages.EvtAgentFinished)) != 1 {
		t.Errorf("remote ends: %d cancelled, %d finished; want 1 and 1",
			len(remoteRec.OfType(messages.EvtAgentCancelled)), len(remoteRec.OfType(messages.EvtAgentFinished)))
	}
	for _, a := range res.Budget.Agents {
		if a.Kind == "explore" && (a.Used.Tokens == 0 || a.State != messages.BudgetStateReleased) {
			t.Errorf("remote explore agent's lease: %+v", a)
		}
	}
	var cancelled bool
	for _, ev := range rec.OfType(messages.EvtToolFinished) {
		d, err := messages.DecodeAs[messages.ToolFinished](ev)
		if err == nil && d.Tool == "cancel_agent" && !d.IsError {
			cancelled = true
		}
	}
	if !cancelled {
		t.Error("cancel_agent on the remote child failed")
	}
	if res.Budget == nil || res.Budget.Slots != 0 || res.Budget.Reserved != 0 {
		t.Errorf("leases not all back: %+v", res.Budget)
	}
}

// endingPlacer runs children here and, like the remote placer, emits an
// event of the run of its own when the run ends (its node.left).
type endingPlacer struct {
	actors.LocalPlacer
	rec   *actors.Recorder
	run   string
	ended int
}

func (p *endingPlacer) EndRun() {
	p.ended++
	ev, _ := messages.NewEvent(p.run, "nodes", messages.EvtNodeLeft, 1, messages.NodeLeft{Node: "n1", Reason: "lost"})
	p.rec.Emit(ev)
}

// A Placer that emits events of the run beside its agents is told the
// run ended before run.finished, so what it emits then comes first: a
// watcher that stops at run.finished reads it.
func TestRunEnderEndsBeforeRunFinished(t *testing.T) {
	srv := llmtest.New(script(kind("root", say("done"))))
	defer srv.Close()
	rec := &actors.Recorder{}
	o := options(t, srv, workspace(t, fixtureRepo), "say done", rec)
	o.Settings = noPlan()
	p := &endingPlacer{rec: rec, run: o.Run}
	o.Placer = p
	res := run(t, o)
	if res.Status != actors.StatusCompleted || p.ended != 1 {
		t.Fatalf("run %s, EndRun called %d times", res.Status, p.ended)
	}
	evs := rec.Events()
	if n := len(evs); n < 2 || evs[n-1].Type != messages.EvtRunFinished || evs[n-2].Type != messages.EvtNodeLeft {
		t.Errorf("the run's last events: %v", evs[max(0, len(evs)-3):])
	}
}
