package cluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		t.Errorf("the second grandchild's edit did not land:\n%s", b)
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
