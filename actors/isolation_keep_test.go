package actors_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// loneWorkerRun runs a root that starts one worker in its own worktree,
// the worker's turns given.
func loneWorkerRun(t *testing.T, ws string, worker ...llmtest.Turn) actors.Result {
	t.Helper()
	return loneWorkerRunLimit(t, ws, 0, worker...)
}

// loneWorkerRunLimit is loneWorkerRun with agent.max_change_bytes set
// (0: the default).
func loneWorkerRunLimit(t *testing.T, ws string, maxChange int64, worker ...llmtest.Turn) actors.Result {
	t.Helper()
	return loneWorkerRunIn(t, ws, "", maxChange, worker...)
}

// loneWorkerRunIn is loneWorkerRunLimit in worktrees of the kind named
// (agent.worktrees; "" for the default).
func loneWorkerRunIn(t *testing.T, ws, worktrees string, maxChange int64, worker ...llmtest.Turn) actors.Result {
	t.Helper()
	w := llmtest.AgentScript{Match: llmtest.Matcher{Kind: "worker", TaskContains: "alpha"}, Turns: worker}
	srv := llmtest.New(script(kind("root", calls(delegate("worker", "task alpha", false)), say("all done")), w))
	t.Cleanup(srv.Close)
	o := options(t, srv, ws, "change things", &actors.Recorder{})
	o.Settings.PlanFirst = map[string]bool{"root": false, "worker": false}
	o.Settings.Isolation = "worktree"
	o.Settings.Worktrees = worktrees
	o.Settings.MaxChangeBytes = maxChange
	return run(t, o)
}

// keptOutcome checks that the run's one change outcome is an error that
// kept the worker's worktree, holding its edit of g.go, and returns it.
func keptOutcome(t *testing.T, res actors.Result) messages.ChangeOutcome {
	t.Helper()
	if len(res.Changes) != 1 || res.Changes[0].Status != messages.ChangeStatusError || res.Changes[0].Error == "" {
		t.Fatalf("changes %+v, want one error", res.Changes)
	}
	c := res.Changes[0]
	if c.Worktree == "" {
		t.Fatalf("no worktree kept: %+v", c)
	}
	if g, err := os.ReadFile(filepath.Join(c.Worktree, "g.go")); err != nil || !strings.Contains(string(g), "G = 3") {
		t.Errorf("the kept worktree %s lost the edit: %q %v", c.Worktree, g, err)
	}
	return c
}

// When an agent's changes cannot be captured (git refuses a path the
// worker made), its worktree is kept whole, not reset, parked or
// removed, and run's changes (what run --json prints) say so and where,
// naming the patch of what could be captured (it applies to the snapshot).
func TestCaptureErrorKeepsTheWorktree(t *testing.T) {
	ws := gitRepo(t, map[string]string{"g.go": "package p\n\nvar G = 1\n"})
	res := loneWorkerRun(t, ws,
		calls(tc("read_file", `{"path":"g.go"}`)),
		calls(tc("edit_file", `{"path":"g.go","old_string":"G = 1","new_string":"G = 3"}`),
			tc("shell", `{"command":"mkdir -p sub/.GIT && echo x > sub/.GIT/x"}`)),
		say("done"))
	c := keptOutcome(t, res)
	if !strings.Contains(c.Error, "capture") {
		t.Errorf("error %q does not say the capture failed", c.Error)
	}
	if c.Patch == "" || !strings.Contains(c.Error, "sub/.GIT/x") {
		t.Fatalf("run's changes name no patch of what could be captured, or not what it leaves out: %+v", c)
	}
	if out, err := exec.Command("git", "-C", ws, "apply", "--check", c.Patch).CombinedOutput(); err != nil {
		t.Errorf("the kept patch does not apply to the snapshot: %v %s", err, out)
	}
	if g, _ := os.ReadFile(filepath.Join(ws, "g.go")); string(g) != "package p\n\nvar G = 1\n" {
		t.Errorf("the workspace changed: %q", g)
	}
}

// When the changes are captured but cannot be written into the
// workspace (an immutable file), the worktree is kept and the
// changeset's patch written; the patch applies to the snapshot.
func TestApplyErrorKeepsTheWorktreeAndThePatch(t *testing.T) {
	ws := gitRepo(t, map[string]string{"g.go": "package p\n\nvar G = 1\n"})
	target := filepath.Join(ws, "g.go")
	if out, err := exec.Command("chattr", "+i", target).CombinedOutput(); err != nil {
		t.Skipf("this file system cannot make a file immutable: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", target).Run() })
	res := loneWorkerRun(t, ws, calls(tc("read_file", `{"path":"g.go"}`)),
		calls(tc("edit_file", `{"path":"g.go","old_string":"G = 1","new_string":"G = 3"}`)), say("done"))
	c := keptOutcome(t, res)
	if c.Patch == "" {
		t.Fatalf("no patch kept: %+v", c)
	}
	gitIn(t, ws, "apply", "--cached", "--check", c.Patch)
}
