package cluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// leadKinds are the built-in kinds and "lead", a kind that edits files
// and delegates.
func leadKinds() map[string]actors.Kind {
	kinds := actors.BuiltinKinds()
	kinds["lead"] = actors.Kind{Name: "lead", Description: "edits and delegates", MayDelegate: true,
		Tools: []string{"read_file", "write_file", "edit_file", "grep", "delegate"}}
	return kinds
}

// A remote agent that delegates two workers on its node: they work in the
// remote agent's worktree of the requester's snapshot (one shares it, the
// other works in a worktree of a snapshot of it; both read the
// requester's state), their changes join the remote agent's own, and all
// land in the requester's workspace; the node's checkout is untouched
// and no worktree is left. An explore agent the remote agent starts reads the snapshot
// too.
func TestNestedDelegationOnANodeBringsTheGrandchildsChangesHome(t *testing.T) {
	for _, mode := range []string{"auto", "worktree"} {
		t.Run(mode, func(t *testing.T) { nestedOnANode(t, mode) })
	}
}

func nestedOnANode(t *testing.T, isolation string) {
	requester, nodeWS := aheadAndBehind(t, "NEEDLE_NESTED")
	nodeHead := testfiles.Git(t, nodeWS, "rev-parse", "HEAD")
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"lead","task":"lead the change"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "lead"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{
				{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"find the needle"}`)},
				{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"edit util.go"}`)},
				{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"edit main.go"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: json.RawMessage(`{"path":"lead.go","content":"package main // by the lead\n"}`)}}},
			{Text: "led"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"NEEDLE_NESTED"}`)}}},
			{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
				return llmtest.Turn{Text: "grep said: " + req.Messages[len(req.Messages)-1].Content}
			}}}},
		{Match: llmtest.Matcher{Kind: "worker", TaskContains: "main.go"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"main.go"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "edit_file", Args: json.RawMessage(`{"path":"main.go","old_string":"func main() {}","new_string":"func main() { util() }"}`)}}},
			{Text: "edited main.go"}}},
		{Match: llmtest.Matcher{Kind: "worker", TaskContains: "util.go"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"util.go"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "edit_file", Args: json.RawMessage(`{"path":"util.go","old_string":"func util() {}","new_string":"func util() { println(\"grandchild\") }"}`)}}},
			{Text: "edited util.go"}}},
	}})
	defer srv.Close()
	settings := actors.Settings{MaxDepth: 2, Isolation: isolation, PlanFirst: map[string]bool{"root": false, "worker": false},
		Estimates: map[string]int64{"lead": 50_000, "worker": 10_000, "explore": 10_000}}
	res, _ := remoteRun(t, srv, requester, nodeWS, []string{"lead"}, actors.Options{Kinds: leadKinds(), Settings: settings})
	var explored string
	for _, c := range toolResults(srv, "lead") {
		if _, said, ok := strings.Cut(c, "grep said: "); ok {
			explored = said
		}
	}
	if !strings.Contains(explored, "util.go") {
		t.Errorf("the explore agent the remote agent started did not read the requester's snapshot: %q", explored)
	}
	if b, _ := os.ReadFile(filepath.Join(requester, "util.go")); !strings.Contains(string(b), `println("grandchild")`) ||
		!strings.Contains(string(b), "NEEDLE_NESTED") {
		t.Errorf("the grandchild's edit did not land on the requester's uncommitted util.go:\n%s\nthe lead read: %q", b, toolResults(srv, "lead"))
	}
	if b, _ := os.ReadFile(filepath.Join(requester, "main.go")); !strings.Contains(string(b), "func main() { util() }") {
		t.Errorf("the second grandchild's edit did not land:\n%s\nworkers: %q\nlead: %q\nchanges: %+v", b, toolResults(srv, "worker"), toolResults(srv, "lead"), res.Changes)
	}
	if b, err := os.ReadFile(filepath.Join(requester, "lead.go")); err != nil || string(b) != "package main // by the lead\n" {
		t.Errorf("the remote agent's own file did not land: %q %v", b, err)
	}
	if len(res.Changes) != 1 || res.Changes[0].Status != messages.ChangeStatusApplied || len(res.Changes[0].Files) != 3 {
		t.Errorf("changes %+v, want the lead's one changeset of three files, applied", res.Changes)
	}
	if st := testfiles.Git(t, nodeWS, "status", "--porcelain"); st != "" || testfiles.Git(t, nodeWS, "rev-parse", "HEAD") != nodeHead {
		t.Errorf("the node's checkout changed:\n%s", st)
	}
	if list := testfiles.Git(t, nodeWS, "worktree", "list"); strings.Count(list, "\n") != 0 {
		t.Errorf("worktrees registered in the node's checkout:\n%s", list)
	}
	if left, _ := os.ReadDir(filepath.Join(nodeWS, ".troupe", "nested")); len(left) != 0 {
		t.Errorf("nested isolation data left on the node: %v", left)
	}
}

// A remote agent whose two workers on its node change the same line: one
// merges into its worktree, the other conflicts there, and that one's
// patch comes home in the remote agent's result (through the changes
// bucket when large): the requester keeps it as
// .troupe/runs/<run>/changes/<agent>.patch, emits changes.conflict, lists
// it in the run's changes and tells the root; the remote agent was told
// where the requester keeps it. The patch applies with git apply to the
// requester's snapshot, which the workers started from.
func TestANestedConflictOnANodeComesHome(t *testing.T) {
	t.Run("inline", func(t *testing.T) { nestedConflictOnANode(t, 0) })
	t.Run("stored", func(t *testing.T) { nestedConflictOnANode(t, 3000) })
}

// gated holds the first turn of the agents of scripts until all have
// made their first request, so they start from the same state.
func gated(scripts ...llmtest.AgentScript) []llmtest.AgentScript {
	var arrived sync.WaitGroup
	arrived.Add(len(scripts))
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	for i, s := range scripts {
		first := s.Turns[0]
		s.Turns = append([]llmtest.Turn{{Dynamic: func(llmtest.Recorded) llmtest.Turn {
			arrived.Done()
			select {
			case <-all:
			case <-time.After(time.Minute):
			}
			return first
		}}}, s.Turns[1:]...)
		scripts[i] = s
	}
	return scripts
}

func nestedConflictOnANode(t *testing.T, bigLines int) {
	requester, nodeWS := aheadAndBehind(t, "NEEDLE_CONFLICT")
	start, err := os.ReadFile(filepath.Join(requester, "util.go"))
	if err != nil {
		t.Fatal(err)
	}
	worker := func(task, body string) llmtest.AgentScript {
		edit, _ := json.Marshal(map[string]string{"path": "util.go", "old_string": "func util() {}", "new_string": "func util() { " + body + " }"})
		turns := []llmtest.Turn{{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"util.go"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "edit_file", Args: edit}}}}
		if bigLines > 0 {
			big, _ := json.Marshal(map[string]string{"path": "gen/" + task + ".go",
				"content": "package gen\n" + strings.Repeat("// generated by "+task+", a long line to make the patch large\n", bigLines)})
			turns = append(turns, llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: big}}})
		}
		return llmtest.AgentScript{Match: llmtest.Matcher{Kind: "worker", TaskContains: task}, Turns: append(turns, llmtest.Turn{Text: "edited"})}
	}
	agents := append([]llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"lead","task":"lead the change"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "lead"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{
				{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"left"}`)},
				{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"right"}`)}}},
			{Text: "led"}}}},
		gated(worker("left", `println("left")`), worker("right", `println("right")`))...)
	srv := llmtest.New(llmtest.Script{Agents: agents})
	defer srv.Close()
	rec := &recorder{}
	settings := actors.Settings{MaxDepth: 2, Isolation: "worktree", PlanFirst: map[string]bool{"root": false, "worker": false},
		Estimates: map[string]int64{"lead": 50_000, "worker": 10_000}}
	res, remote := remoteRun(t, srv, requester, nodeWS, []string{"lead"}, actors.Options{Kinds: leadKinds(), Settings: settings, Events: rec})
	var lead, conflict messages.ChangeOutcome
	for _, c := range res.Changes {
		switch c.Status {
		case messages.ChangeStatusApplied:
			lead = c
		case messages.ChangeStatusConflict:
			conflict = c
		}
	}
	if len(res.Changes) != 2 || !strings.HasPrefix(lead.Agent, "lead-") || !strings.HasPrefix(conflict.Agent, "worker-") {
		t.Fatalf("changes %+v, want the lead's applied and a worker's conflict", res.Changes)
	}
	state, err := actors.StateDir(requester)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(state, "runs", "rr", "changes", conflict.Agent+".patch")
	if conflict.Patch != want || len(conflict.Conflicts) != 1 || conflict.Conflicts[0] != "util.go" {
		t.Errorf("conflict %+v, want its patch at %s", conflict, want)
	}
	var evs []messages.Event
	for _, ev := range rec.events() {
		if ev.Type == messages.EvtChangesConflict {
			evs = append(evs, ev)
		}
	}
	if len(evs) != 1 || !strings.Contains(string(evs[0].Data), conflict.Agent) || !strings.Contains(string(evs[0].Data), strconv.Quote(want)) {
		t.Errorf("changes.conflict events on the requester %v, want one naming %s", evs, want)
	}
	var leadTold, rootTold bool
	for _, c := range toolResults(srv, "lead") {
		leadTold = leadTold || strings.Contains(c, "NOT applied") && strings.Contains(c, filepath.Join("runs", "rr", "changes", conflict.Agent+".patch")+" in the requester's data directory")
	}
	for _, c := range toolResults(srv, "root") {
		rootTold = rootTold || strings.Contains(c, "[changes of "+conflict.Agent+", started by "+lead.Agent+" on its node: NOT applied") && strings.Contains(c, want)
	}
	if !leadTold || !rootTold {
		t.Errorf("told where the patch is: the lead %v, the root %v\nlead: %q\nroot: %q", leadTold, rootTold, toolResults(srv, "lead"), toolResults(srv, "root"))
	}
	u, _ := os.ReadFile(filepath.Join(requester, "util.go"))
	won, lost := "left", "right"
	if strings.Contains(string(u), `println("right")`) {
		won, lost = lost, won
	}
	if !strings.Contains(string(u), `println("`+won+`")`) || !strings.Contains(string(u), "NEEDLE_CONFLICT") {
		t.Fatalf("the merged worker's edit did not land on the requester's util.go:\n%s", u)
	}
	// The workers started from the requester's snapshot: HEAD and its
	// uncommitted util.go.
	snap := t.TempDir()
	testfiles.Git(t, snap, "clone", "-q", requester, ".")
	if err := os.WriteFile(filepath.Join(snap, "util.go"), start, 0o644); err != nil {
		t.Fatal(err)
	}
	testfiles.Git(t, snap, "apply", want)
	if b, _ := os.ReadFile(filepath.Join(snap, "util.go")); !strings.Contains(string(b), `println("`+lost+`")`) {
		t.Errorf("the patch applied to the snapshot gives util.go:\n%s", b)
	}
	if bigLines > 0 {
		if b, err := os.ReadFile(filepath.Join(snap, "gen", lost+".go")); err != nil || strings.Count(string(b), "\n") != bigLines+1 {
			t.Errorf("the large file of the conflicting worker: %d lines, %v", strings.Count(string(b), "\n"), err)
		}
		obs, err := remote.o.Bus.JetStream().ObjectStore(t.Context(), remote.o.Bus.Names().Changes)
		if err != nil {
			t.Fatal(err)
		}
		list, _ := obs.List(t.Context())
		var stored bool
		for _, o := range list {
			stored = stored || strings.HasSuffix(o.Name, "-"+conflict.Agent+".patch")
		}
		if !stored {
			t.Error("the large nested patch did not go through the changes bucket")
		}
	}
	if left, _ := os.ReadDir(filepath.Join(nodeWS, ".troupe", "nested")); len(left) != 0 {
		t.Errorf("nested isolation data left on the node: %v", left)
	}
}
