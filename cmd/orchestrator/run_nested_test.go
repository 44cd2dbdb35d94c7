package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// A lead (an agent definition that edits and delegates) works in its own
// worktree and starts two workers that change the same line: run --json
// lists the lead's applied changes and the conflicting worker's, whose
// patch is in the run's changes directory and applies to the state the
// workers started from.
func TestRunJSONListsANestedConflict(t *testing.T) {
	ws := t.TempDir()
	testfiles.Git(t, ws, "init", "-q")
	files := map[string]string{".gitignore": ".troupe/\n", "f.go": "package f\n\nvar F = 1\n"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testfiles.Git(t, ws, "add", "-A")
	testfiles.Git(t, ws, "commit", "-q", "-m", "first")
	// A kind that edits and delegates, deeper delegation: the user's own
	// config (a workspace's may only narrow).
	home := homeWith(t, "agent:\n  plan_first: {root: false, worker: false, lead: false}\n  isolation: worktree\n  max_depth: 2\n"+
		"  estimates: {lead: 500000, worker: 10000}\nkinds:\n  lead:\n    description: edits and delegates\n"+
		"    tools: [read_file, write_file, edit_file, delegate]\n    model_role: parent\n    may_delegate: true\n    prompt: Lead.\n")
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	worker := func(task, value string) llmtest.AgentScript {
		edit, _ := json.Marshal(map[string]string{"path": "f.go", "old_string": "F = 1", "new_string": "F = " + value})
		return llmtest.AgentScript{Match: llmtest.Matcher{Kind: "worker", TaskContains: task}, Turns: []llmtest.Turn{
			{Dynamic: func(llmtest.Recorded) llmtest.Turn {
				arrived.Done() // both start from the same state
				select {
				case <-both:
				case <-time.After(time.Minute):
				}
				return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"f.go"}`)}}}
			}},
			{ToolCalls: []llmtest.ToolCall{{Name: "edit_file", Args: edit}}},
			{Text: "set F"}}}
	}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"lead","task":"lead it"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "lead"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{
				{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"set two"}`)},
				{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"set three"}`)}}},
			{Text: "led"}}},
		worker("set two", "2"), worker("set three", "3"),
	}})
	t.Cleanup(srv.Close)
	code, out, errs := runCmd(t, t.Context(), testEnv(srv, home), false, "--workspace", ws, "--json", "change F")
	var res struct {
		Run     string `json:"run"`
		Changes []struct {
			Agent, Status, Patch string
			Files, Conflicts     []string
		} `json:"changes"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	var patch, lead string
	for _, c := range res.Changes {
		switch {
		case c.Status == "applied" && strings.HasPrefix(c.Agent, "lead-"):
			lead = c.Agent
		case c.Status == "conflict" && strings.HasPrefix(c.Agent, "worker-") && len(c.Conflicts) == 1 && c.Conflicts[0] == "f.go":
			patch = c.Patch
			if want := filepath.Join(stateDirOf(t, ws), "runs", res.Run, "changes", c.Agent+".patch"); patch != want {
				t.Errorf("patch %s, want %s", patch, want)
			}
		}
	}
	if len(res.Changes) != 2 || lead == "" || patch == "" {
		for _, r := range srv.Requests() {
			for _, m := range r.Messages {
				if m.Role == "tool" {
					t.Logf("%s read: %s", r.Kind, m.Content)
				}
			}
		}
		t.Fatalf("run --json changes: %+v\n%s", res.Changes, errs)
	}
	f, _ := os.ReadFile(filepath.Join(ws, "f.go"))
	lost := map[string]string{"package f\n\nvar F = 2\n": "3", "package f\n\nvar F = 3\n": "2"}[string(f)]
	if lost == "" {
		t.Fatalf("f.go holds neither worker's change:\n%s", f)
	}
	// The workers started from the lead's worktree, which was HEAD.
	snap := t.TempDir()
	testfiles.Git(t, snap, "clone", "-q", ws, ".")
	testfiles.Git(t, snap, "apply", patch)
	if b, _ := os.ReadFile(filepath.Join(snap, "f.go")); string(b) != "package f\n\nvar F = "+lost+"\n" {
		t.Errorf("the patch applied to the snapshot gives:\n%s", b)
	}
}
