package actors_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// teamChild is a RemoteChild that runs the child as a team of its own (a
// second actor system, its own budget), the way a node runs a task: only
// the ChildTask crosses, and only the result comes back.
type teamChild struct {
	t      *testing.T
	srv    *llmtest.Server
	ws     string
	task   actors.ChildTask
	rec    *actors.Recorder
	mu     sync.Mutex
	team   *actors.Team
	inputs []string
	ready  chan struct{}
}

func (c *teamChild) Start(ctx context.Context) (actors.AgentResult, error) {
	kinds := actors.BuiltinKinds()
	k := kinds[c.task.Kind]
	k.Name, k.Tools = actors.KindRoot, c.task.Tools // the node's agent is its team's top
	o := options(c.t, c.srv, c.ws, c.task.Task, c.rec)
	o.Run, o.Kinds = c.task.Run+"-"+c.task.ID, map[string]actors.Kind{actors.KindRoot: k}
	o.Settings = noPlan()
	team, err := actors.Start(ctx, o)
	if err != nil {
		return actors.AgentResult{}, err
	}
	c.mu.Lock()
	c.team = team
	c.mu.Unlock()
	close(c.ready)
	res, err := team.Wait(ctx)
	return res.AgentResult, err
}

func (c *teamChild) Status(ctx context.Context) (actors.StatusReply, error) {
	return actors.StatusReply{Agent: c.task.ID, Kind: c.task.Kind, Round: 1, Model: c.task.Model}, nil
}

func (c *teamChild) SendInput(ctx context.Context, message string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inputs = append(c.inputs, message)
	return true, nil
}

func (c *teamChild) Cancel(reason string) {
	<-c.ready
	c.mu.Lock()
	team := c.team
	c.mu.Unlock()
	team.Cancel()
}

// remotePlacer places every child of the given kinds remotely.
type remotePlacer struct {
	t     *testing.T
	srv   *llmtest.Server
	ws    string
	kinds []string
	rec   *actors.Recorder
	mu    sync.Mutex
	kids  map[string]*teamChild
}

func (p *remotePlacer) Place(_ context.Context, task actors.ChildTask) (actors.RemoteChild, error) {
	if !has(p.kinds, task.Kind) {
		return nil, nil
	}
	if task.Run == "" || task.ID == "" || task.Parent != actors.RootAgentID || task.Model == "" || len(task.Tools) == 0 || task.LeaseTokens <= 0 {
		return nil, fmt.Errorf("incomplete task: %+v", task)
	}
	c := &teamChild{t: p.t, srv: p.srv, ws: p.ws, task: task, rec: p.rec, ready: make(chan struct{})}
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
			return calls(tc("cancel_agent", fmt.Sprintf(`{"agent_id":%q}`, backgroundIDs(req)[0])))
		}},
		say("done"),
	)
	remoteQ := llmtest.AgentScript{Match: llmtest.Matcher{TaskContains: "remote-q"}, Turns: []llmtest.Turn{
		calls(tc("grep", `{"pattern":"func main"}`)), say("main is in cmd/app/main.go:3")}}
	remoteBG := llmtest.AgentScript{Match: llmtest.Matcher{TaskContains: "remote-bg"}, Turns: []llmtest.Turn{
		{Text: "never", Latency: llmtest.Duration(time.Minute)}}}
	planner := llmtest.AgentScript{Match: llmtest.Matcher{Kind: "planner"}, Turns: []llmtest.Turn{
		calls(tc("submit_plan", `{"summary":"s","steps":[{"title":"t"}]}`))}}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{remoteQ, remoteBG, root, planner}})
	defer srv.Close()

	o := options(t, srv, ws, "find things", rec)
	o.Settings = noPlan()
	placer := &remotePlacer{t: t, srv: srv, ws: ws, kinds: []string{"explore"}, rec: remoteRec, kids: map[string]*teamChild{}}
	o.Placer = placer
	res := run(t, o)
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
		d := dataOf(t, ev)
		placements[d["kind"].(string)+":"+fmt.Sprint(d["background"])] = d["placement"].(string)
	}
	if placements["explore:false"] != "remote" || placements["explore:true"] != "remote" || placements["planner:false"] != "local" {
		t.Errorf("placements %v", placements)
	}
	for _, c := range placer.kids {
		if strings.Contains(c.task.Task, "remote-bg") && (len(c.inputs) != 1 || c.inputs[0] != "hurry") {
			t.Errorf("send_input did not reach the remote child: %v", c.inputs)
		}
	}
	var cancelled bool
	for _, ev := range rec.OfType(messages.EvtToolFinished) {
		d := dataOf(t, ev)
		if d["tool"] == "cancel_agent" && d["is_error"] == false {
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
