package actors_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// unisolatable is a repository in which no worktree can be made: a
// file stands where the worktrees' directory goes (what a full or
// read-only data directory does to a run, whoever runs it).
func unisolatable(t *testing.T) string {
	t.Helper()
	ws := gitRepo(t, map[string]string{"f.go": twoFuncs})
	if err := os.MkdirAll(actors.DataDir(ws), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(actors.DataDir(ws), "worktrees"), []byte("in the way\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

// A worker whose worktree cannot be made never starts: its parent's
// model is told, and so is everyone else: its agent.failed is on the
// bus with the reason, and the run's result counts it failed and names
// it (sub_agents.not_started), though the root completed.
func TestWorkerThatCannotStartIsFailedOnTheBus(t *testing.T) {
	ws := unisolatable(t)
	res, rec, srv := isolatedRun(t, ws, []string{"task alpha"}, editor("alpha", "f.go", "return 1", "return 10"))
	if res.Status != actors.StatusCompleted || res.SubAgents.Failed != 1 || res.SubAgents.Completed != 0 {
		t.Fatalf("run %s, sub-agents %+v", res.Status, res.SubAgents)
	}
	if len(res.SubAgents.NotStarted) != 1 || !strings.Contains(res.SubAgents.NotStarted[0], "(worker): isolate worker") {
		t.Errorf("not started: %q", res.SubAgents.NotStarted)
	}
	var failed []messages.AgentEnded
	for _, ev := range rec.OfType(messages.EvtAgentFailed) {
		d, err := messages.DecodeAs[messages.AgentEnded](ev)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != "worker" || ev.Parent != actors.RootAgentID || ev.Seq != 1 || !strings.HasPrefix(res.SubAgents.NotStarted[0], ev.Agent+" ") {
			t.Errorf("agent.failed %+v", ev)
		}
		failed = append(failed, d)
	}
	if len(failed) != 1 || failed[0].Reason != actors.ReasonError || !strings.Contains(failed[0].Error, "did not start: isolate worker") {
		t.Errorf("agent.failed events %+v", failed)
	}
	if n := len(requestsOf(srv, "worker")); n != 0 {
		t.Errorf("the worker that did not start made %d model calls", n)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f.go")); string(b) != twoFuncs {
		t.Errorf("f.go changed: %q", b)
	}
}

// A worker placed on a node is placed before it enters the workspace
// lifecycle: no worktree is made for it here, so a run that cannot make
// one still runs it.
func TestRemoteWorkerGetsNoLocalWorktree(t *testing.T) {
	ws := unisolatable(t)
	srv := llmtest.New(script(kind("root", calls(delegate("worker", "task alpha", false)), say("all done")),
		llmtest.AgentScript{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{say("done on the node")}}))
	defer srv.Close()
	rec := &actors.Recorder{}
	o := options(t, srv, ws, "change things", rec)
	o.Settings.PlanFirst = map[string]bool{"root": false, "worker": false}
	o.Settings.Isolation = "worktree"
	placer := &remotePlacer{t: t, srv: srv, ws: t.TempDir(), kinds: []string{"worker"}, rec: &actors.Recorder{},
		kids: map[string]*agentChild{}, team: make(chan *actors.Team, 1)}
	o.Placer = placer
	team, err := actors.Start(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	placer.team <- team
	res, err := team.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actors.StatusCompleted || res.SubAgents.Completed != 1 || res.SubAgents.Failed != 0 || len(placer.kids) != 1 {
		t.Fatalf("run %s, sub-agents %+v, placed remotely %d", res.Status, res.SubAgents, len(placer.kids))
	}
	if n := len(rec.OfType(messages.EvtAgentFailed)); n != 0 {
		t.Errorf("%d agent.failed", n)
	}
}
