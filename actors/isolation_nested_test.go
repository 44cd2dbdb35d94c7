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
