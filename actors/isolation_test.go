package actors_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// twoFuncs is a file whose two functions are separate merge regions.
const twoFuncs = "package p\n\nfunc A() int {\n\treturn 1\n}\n\n// padding\n// 1\n// 2\n// 3\n// 4\n\nfunc B() int {\n\treturn 2\n}\n"

// gitRepo makes a git repository of files, committed.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is needed: install git")
		}
		t.Skip("git not installed")
	}
	dir := workspace(t, files)
	gitIn(t, dir, "init", "-q", "-b", "main")
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
	return dir
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// editor is a worker's script: read path, replace old by new, say done.
func editor(task, path, old, new string) llmtest.AgentScript {
	args, _ := json.Marshal(map[string]string{"path": path, "old_string": old, "new_string": new})
	return llmtest.AgentScript{Match: llmtest.Matcher{Kind: "worker", TaskContains: task}, Turns: []llmtest.Turn{
		calls(tc("read_file", `{"path":"`+path+`"}`)), calls(tc("edit_file", string(args))), say("edited " + path)}}
}

// isolatedRun runs a root that starts the given workers in one turn, each
// in its own worktree.
func isolatedRun(t *testing.T, ws string, tasks []string, workers ...llmtest.AgentScript) (actors.Result, *actors.Recorder, *llmtest.Server) {
	t.Helper()
	var ds []llmtest.ToolCall
	for _, task := range tasks {
		ds = append(ds, delegate("worker", task, false))
	}
	srv := llmtest.New(script(append([]llmtest.AgentScript{kind("root", calls(ds...), say("all done"))}, workers...)...))
	t.Cleanup(srv.Close)
	rec := &actors.Recorder{}
	o := options(t, srv, ws, "change things", rec)
	o.Settings.PlanFirst = map[string]bool{"root": false, "worker": false}
	o.Settings.Isolation = "worktree"
	return run(t, o), rec, srv
}

func TestParallelWorkersChangesAllLand(t *testing.T) {
	ws := gitRepo(t, map[string]string{"f.go": twoFuncs, "g.go": "package p\n\nvar G = 1\n"})
	res, rec, srv := isolatedRun(t, ws, []string{"task alpha", "task beta", "task gamma"},
		editor("alpha", "f.go", "return 1", "return 10"),
		editor("beta", "f.go", "return 2", "return 20"),
		editor("gamma", "g.go", "G = 1", "G = 3"))
	f, _ := os.ReadFile(filepath.Join(ws, "f.go"))
	g, _ := os.ReadFile(filepath.Join(ws, "g.go"))
	if !strings.Contains(string(f), "return 10") || !strings.Contains(string(f), "return 20") || !strings.Contains(string(g), "G = 3") {
		t.Fatalf("not every change landed:\n%s\n%s\nchanges %+v", f, g, res.Changes)
	}
	if len(res.Changes) != 3 {
		t.Fatalf("changes %+v", res.Changes)
	}
	for _, c := range res.Changes {
		if c.Status != messages.ChangeStatusApplied {
			t.Errorf("%+v", c)
		}
	}
	if n := len(rec.OfType(messages.EvtChangesApplied)); n != 3 {
		t.Errorf("%d changes.applied events", n)
	}
	if n := len(rec.OfType(messages.EvtChangesReady)); n != 3 {
		t.Errorf("%d changes.ready events", n)
	}
	strictChanges(t, rec)
	last := requestsOf(srv, "root")
	if msgs := last[len(last)-1].Messages; !strings.Contains(msgs[len(msgs)-1].Content+msgs[len(msgs)-2].Content+msgs[len(msgs)-3].Content, "[changes: merged into the workspace") {
		t.Error("the root was not told its workers' changes were merged")
	}
	if list := gitIn(t, ws, "worktree", "list"); strings.Count(list, "\n") != 0 {
		t.Errorf("worktrees left:\n%s", list)
	}
}

func TestWorkersOnTheSameLineConflict(t *testing.T) {
	ws := gitRepo(t, map[string]string{"f.go": twoFuncs})
	res, rec, _ := isolatedRun(t, ws, []string{"task alpha", "task beta"},
		editor("alpha", "f.go", "return 1", "return 100"),
		editor("beta", "f.go", "return 1", "return 200"))
	if len(res.Changes) != 2 {
		t.Fatalf("changes %+v", res.Changes)
	}
	byStatus := map[string]messages.ChangeOutcome{}
	for _, c := range res.Changes {
		byStatus[c.Status] = c
	}
	applied, conflict := byStatus["applied"], byStatus["conflict"]
	if applied.Agent == "" || conflict.Agent == "" {
		t.Fatalf("want one applied and one conflict: %+v", res.Changes)
	}
	want := filepath.Join(ws, ".troupe", "runs", res.Run, "changes", conflict.Agent+".patch")
	if conflict.Patch != want || len(conflict.Conflicts) != 1 || conflict.Conflicts[0] != "f.go" {
		t.Errorf("conflict %+v, want patch %s", conflict, want)
	}
	// The snapshot was HEAD (a clean checkout): the patch applies to it.
	gitIn(t, ws, "apply", "--cached", "--check", conflict.Patch)
	strictChanges(t, rec)
	evs := rec.OfType(messages.EvtChangesConflict)
	if len(evs) != 1 || !strings.Contains(string(evs[0].Data), conflict.Patch) {
		t.Errorf("changes.conflict events: %v", evs)
	}
}

// With --changes branch, auto isolation gives even a lone worker a
// worktree: its change is committed on its branch, and the working tree
// is left as it was.
func TestAutoIsolationWithBranchLeavesTheTreeAlone(t *testing.T) {
	ws := gitRepo(t, map[string]string{"g.go": "package p\n\nvar G = 1\n"})
	srv := llmtest.New(script(kind("root", calls(delegate("worker", "task alpha", false)), say("all done")),
		editor("alpha", "g.go", "G = 1", "G = 3")))
	t.Cleanup(srv.Close)
	o := options(t, srv, ws, "change things", &actors.Recorder{})
	o.Settings.PlanFirst = map[string]bool{"root": false, "worker": false}
	o.Settings.Changes = "branch"
	res := run(t, o)
	if g, _ := os.ReadFile(filepath.Join(ws, "g.go")); string(g) != "package p\n\nvar G = 1\n" {
		t.Errorf("the working tree changed under --changes branch: %q", g)
	}
	if len(res.Changes) != 1 || res.Changes[0].Status != "branch" {
		t.Fatalf("changes %+v, want one on a branch", res.Changes)
	}
	if got := gitIn(t, ws, "show", res.Changes[0].Branch+":g.go"); !strings.Contains(got, "G = 3") {
		t.Errorf("branch %s holds %q", res.Changes[0].Branch, got)
	}
}

func TestIsolatedWorkerInAPlainDirectory(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("git not installed")
	}
	ws := workspace(t, map[string]string{"notes.txt": "one\ntwo\n"})
	res, _, _ := isolatedRun(t, ws, []string{"task alpha"}, editor("alpha", "notes.txt", "two", "TWO"))
	if b, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(b) != "one\nTWO\n" || len(res.Changes) != 1 {
		t.Fatalf("notes.txt = %q; changes %+v", b, res.Changes)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git")); err == nil {
		t.Error("the plain directory became a git checkout")
	}
}

func TestLeftoverWorktreesArePrunedAtStart(t *testing.T) {
	ws := gitRepo(t, map[string]string{"f.go": twoFuncs})
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	// What a killed process leaves: its worktree's directory (its git
	// directory is in troupe's own, pruned by the workspace's own test).
	left := filepath.Join(ws, ".troupe", "worktrees", strconv.Itoa(dead.Process.Pid)+"-worker-0")
	if err := os.MkdirAll(filepath.Join(left, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, "sub", "f.go"), []byte(twoFuncs), 0o644); err != nil {
		t.Fatal(err)
	}
	isolatedRun(t, ws, []string{"task alpha"}, editor("alpha", "f.go", "return 1", "return 10"))
	if list := gitIn(t, ws, "worktree", "list"); strings.Count(list, "\n") != 0 {
		t.Errorf("worktrees left:\n%s", list)
	}
	if _, err := os.Stat(left); err == nil {
		t.Error("the leftover worktree's directory is still there")
	}
}

// strictChanges decodes every changes.* event strictly into its catalog
// payload (TestEveryEmittedEventDecodesStrictly leaves them to this file).
func strictChanges(t *testing.T, rec *actors.Recorder) {
	t.Helper()
	for _, typ := range []string{messages.EvtChangesReady, messages.EvtChangesApplied, messages.EvtChangesConflict} {
		for _, ev := range rec.OfType(typ) {
			if err := strictDecode(ev); err != nil {
				t.Errorf("%s: %v", typ, err)
			}
		}
	}
}
