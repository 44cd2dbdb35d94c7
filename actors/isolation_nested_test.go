package actors_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// An agent in its own worktree that starts workers: they work on its
// worktree (a worker reads the file the agent wrote there), their changes
// merge into it, and the workspace receives one changeset, the agent's,
// holding theirs.
func TestWorkersOfAnIsolatedAgentLandInItsWorktree(t *testing.T) {
	ws := gitRepo(t, map[string]string{"f.go": twoFuncs})
	lead := llmtest.AgentScript{Match: llmtest.Matcher{Kind: "lead"}, Turns: []llmtest.Turn{
		calls(tc("write_file", `{"path":"lead.txt","content":"by the lead\n"}`)),
		calls(delegate("worker", "task alpha", false), delegate("worker", "task beta", false)),
		say("led")}}
	reader := llmtest.AgentScript{Match: llmtest.Matcher{Kind: "worker", TaskContains: "beta"}, Turns: []llmtest.Turn{
		calls(tc("read_file", `{"path":"lead.txt"}`)),
		calls(tc("write_file", `{"path":"beta.txt","content":"saw the lead's file\n"}`)),
		say("wrote beta.txt")}}
	srv := llmtest.New(script(kind("root", calls(delegate("lead", "lead it", false)), say("done")), lead, reader,
		editor("alpha", "f.go", "return 1", "return 10")))
	t.Cleanup(srv.Close)
	o := options(t, srv, ws, "change things", &actors.Recorder{})
	o.Kinds = actors.BuiltinKinds()
	o.Kinds["lead"] = actors.Kind{Name: "lead", Description: "edits and delegates", MayDelegate: true,
		Tools: []string{"read_file", "write_file", "edit_file", "delegate"}}
	o.Settings.PlanFirst = map[string]bool{"root": false, "worker": false}
	o.Settings.Isolation, o.Settings.MaxDepth = "worktree", 2
	o.Settings.Estimates = map[string]int64{"lead": 50_000, "worker": 10_000}
	res := run(t, o)
	if f, _ := os.ReadFile(filepath.Join(ws, "f.go")); !strings.Contains(string(f), "return 10") {
		t.Errorf("the worker's edit did not land:\n%s", f)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "beta.txt")); string(b) != "saw the lead's file\n" {
		t.Errorf("beta.txt %q", b)
	}
	var read string
	for _, r := range requestsOf(srv, "worker") {
		for _, m := range r.Messages {
			if m.Role == "tool" && strings.Contains(m.Content, "by the lead") {
				read = m.Content
			}
		}
	}
	if read == "" {
		var all []string
		for _, r := range requestsOf(srv, "lead") {
			for _, m := range r.Messages {
				if m.Role == "tool" {
					all = append(all, m.Content)
				}
			}
		}
		t.Errorf("the worker did not read the file its parent wrote in its worktree; the lead read %q", all)
	}
	if len(res.Changes) != 1 || res.Changes[0].Status != messages.ChangeStatusApplied || len(res.Changes[0].Files) != 3 ||
		!strings.HasPrefix(res.Changes[0].Agent, "lead-") {
		t.Errorf("changes %+v, want the lead's one changeset of three files", res.Changes)
	}
	if list := gitIn(t, ws, "worktree", "list"); strings.Count(list, "\n") != 0 {
		t.Errorf("worktrees left:\n%s", list)
	}
	if left, _ := os.ReadDir(filepath.Join(ws, ".troupe", "nested")); len(left) != 0 {
		t.Errorf("nested isolation data left: %v", left)
	}
}

// gatedPair holds the first turn of two agents until both have made
// their first request, so both start from the same state.
func gatedPair(a, b llmtest.AgentScript) (llmtest.AgentScript, llmtest.AgentScript) {
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	gate := func(s llmtest.AgentScript) llmtest.AgentScript {
		first := s.Turns[0]
		s.Turns = append([]llmtest.Turn{{Dynamic: func(llmtest.Recorded) llmtest.Turn {
			arrived.Done()
			select {
			case <-both:
			case <-time.After(time.Minute):
			}
			return first
		}}}, s.Turns[1:]...)
		return s
	}
	return gate(a), gate(b)
}

// An agent in its own worktree whose two workers change the same line:
// one merges into its worktree, the other conflicts there, and its patch
// comes home: kept in the run's changes directory (not the agent's,
// which goes when it ends), announced by changes.conflict, listed in the
// run's changes, named in the agent's tool result, and applying with git
// apply to the state the worker started from.
func TestANestedConflictComesHome(t *testing.T) {
	ws := gitRepo(t, map[string]string{"f.go": twoFuncs})
	lead := llmtest.AgentScript{Match: llmtest.Matcher{Kind: "lead"}, Turns: []llmtest.Turn{
		calls(tc("write_file", `{"path":"lead.txt","content":"by the lead\n"}`)),
		calls(delegate("worker", "task alpha", false), delegate("worker", "task beta", false)),
		say("led")}}
	alpha, beta := gatedPair(editor("alpha", "f.go", "return 1", "return 10"), editor("beta", "f.go", "return 1", "return 20"))
	srv := llmtest.New(script(kind("root", calls(delegate("lead", "lead it", false)), say("done")), lead, alpha, beta))
	t.Cleanup(srv.Close)
	rec := &actors.Recorder{}
	o := options(t, srv, ws, "change things", rec)
	o.Kinds = actors.BuiltinKinds()
	o.Kinds["lead"] = actors.Kind{Name: "lead", Description: "edits and delegates", MayDelegate: true,
		Tools: []string{"read_file", "write_file", "edit_file", "delegate"}}
	o.Settings.PlanFirst = map[string]bool{"root": false, "worker": false}
	o.Settings.Isolation, o.Settings.MaxDepth = "worktree", 2
	o.Settings.Estimates = map[string]int64{"lead": 50_000, "worker": 10_000}
	res := run(t, o)
	var leadOut, conflict messages.ChangeOutcome
	for _, c := range res.Changes {
		switch {
		case strings.HasPrefix(c.Agent, "lead-"):
			leadOut = c
		case c.Status == messages.ChangeStatusConflict:
			conflict = c
		}
	}
	if len(res.Changes) != 2 || leadOut.Status != messages.ChangeStatusApplied || !strings.HasPrefix(conflict.Agent, "worker-") {
		t.Fatalf("changes %+v, want the lead's applied and a worker's conflict", res.Changes)
	}
	want := filepath.Join(stateOf(t, ws), "runs", res.Run, "changes", conflict.Agent+".patch")
	if conflict.Patch != want || len(conflict.Conflicts) != 1 || conflict.Conflicts[0] != "f.go" {
		t.Errorf("conflict %+v, want its patch at %s", conflict, want)
	}
	f, _ := os.ReadFile(filepath.Join(ws, "f.go"))
	won, lost := "return 10", "return 20"
	if strings.Contains(string(f), lost) {
		won, lost = lost, won
	}
	if !strings.Contains(string(f), won) {
		t.Fatalf("neither worker's change landed:\n%s", f)
	}
	evs := rec.OfType(messages.EvtChangesConflict)
	if len(evs) != 1 || evs[0].Agent != leadOut.Agent || !strings.Contains(string(evs[0].Data), strconv.Quote(want)) ||
		!strings.Contains(string(evs[0].Data), conflict.Agent) {
		t.Errorf("changes.conflict events %v, want one from the lead naming %s", evs, want)
	}
	strictChanges(t, rec)
	var told bool
	for _, r := range requestsOf(srv, "lead") {
		for _, m := range r.Messages {
			told = told || m.Role == "tool" && strings.Contains(m.Content, "NOT applied") && strings.Contains(m.Content, want)
		}
	}
	if !told {
		t.Error("the lead's tool result does not name the patch kept in the run's changes")
	}
	// The workers started from the lead's worktree: HEAD and lead.txt.
	snap := t.TempDir()
	gitIn(t, snap, "clone", "-q", ws, ".")
	if err := os.WriteFile(filepath.Join(snap, "lead.txt"), []byte("by the lead\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, snap, "apply", want)
	if b, _ := os.ReadFile(filepath.Join(snap, "f.go")); !strings.Contains(string(b), lost) {
		t.Errorf("the patch applied to the workers' starting state gives:\n%s", b)
	}
	if left, _ := os.ReadDir(filepath.Join(ws, ".troupe", "nested")); len(left) != 0 {
		t.Errorf("nested isolation data left: %v", left)
	}
}
