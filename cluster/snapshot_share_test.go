package cluster

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// remoteRun is one run in requester whose kinds in remote run on one
// node working in nodeWS, scripted by srv.
func remoteRun(t *testing.T, srv *llmtest.Server, requester, nodeWS string, remote []string, agent actors.Options) (actors.Result, *Remote) {
	t.Helper()
	s := natsServer(t)
	agent.Workspace, agent.Client, agent.Models, agent.Log = nodeWS, modelClient(t, srv), actors.Models{Default: "big"}, zerolog.Nop()
	n, err := StartNode(t.Context(), NodeOptions{Bus: wrap(t, connect(t, s)), ID: "n1", Kinds: remote, Slots: 2,
		Agent: agent, Events: &recorder{}, AckWait: 5 * time.Second, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Drain(context.Background()) })
	place := map[string]string{}
	for _, k := range remote {
		place[k] = PlaceRemote
	}
	r, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, connect(t, s)), Run: "rr", Workspace: requester,
		Placement: place, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	res, err := actors.Run(t.Context(), actors.Options{Run: "rr", Workspace: requester, Task: "t", Client: modelClient(t, srv),
		Models: actors.Models{Default: "big"}, Kinds: agent.Kinds, Placer: r.Placer(), OnBudget: r.ServeBudget,
		Settings: agent.Settings, Events: agent.Events, Log: zerolog.Nop()})
	if err != nil || res.Status != actors.StatusCompleted {
		t.Fatalf("run %+v %v", res, err)
	}
	return res, r
}

// toolResults are the tool results the agents of kind read, in order.
func toolResults(srv *llmtest.Server, kind string) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range srv.Requests() {
		for _, m := range r.Messages {
			if r.Kind == kind && m.Role == "tool" && !seen[m.ToolCallID] {
				seen[m.ToolCallID] = true
				out = append(out, m.Content)
			}
		}
	}
	return out
}

// A remote explore agent placed after the parent edited a file reads the
// edit, though an earlier remote agent of the run was placed with a
// snapshot from before it.
func TestParentsEditReachesALaterRemoteAgent(t *testing.T) {
	requester, nodeWS := aheadAndBehind(t, "unused")
	grep := func(task string) llmtest.AgentScript {
		return llmtest.AgentScript{Match: llmtest.Matcher{Kind: "explore", TaskContains: task}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"NEEDLE_PARENT_EDIT"}`)}}},
			{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
				return llmtest.Turn{Text: task + " grep said: " + req.Messages[len(req.Messages)-1].Content}
			}}}}
	}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"before"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: json.RawMessage(`{"path":"edited.go","content":"package main // NEEDLE_PARENT_EDIT\n"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"after"}`)}}},
			{Text: "done"}}},
		grep("before"), grep("after"),
	}})
	defer srv.Close()
	_, r := remoteRun(t, srv, requester, nodeWS, []string{"explore"}, actors.Options{Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}}})
	var before, after string
	for _, c := range toolResults(srv, "root") {
		if strings.Contains(c, "before grep said") {
			before = c
		}
		if strings.Contains(c, "after grep said") {
			after = c
		}
	}
	if before == "" || strings.Contains(before, "edited.go") {
		t.Errorf("the agent placed before the edit: %q", before)
	}
	if !strings.Contains(after, "edited.go") {
		t.Errorf("the agent placed after the parent's edit did not see it: %q", after)
	}
	if got, _ := r.snaps.snd.Counts(); got != 2 {
		t.Errorf("%d snapshots taken for two delegations, one on each side of an edit", got)
	}
	if _, err := os.Stat(filepath.Join(nodeWS, "edited.go")); err == nil {
		t.Error("the parent's edit reached the node's checkout")
	}
}
