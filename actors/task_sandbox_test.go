package actors

import (
	"testing"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// A task's sandbox tightens a node's (a narrower network, required) and
// never widens it; a node without a sandbox refuses a task requiring one.
func TestTaskSandboxOnlyTightens(t *testing.T) {
	node := &sandbox.Settings{Network: map[string]sandbox.Network{"worker": sandbox.NetworkLoopback}}
	cases := []struct {
		ask      messages.TaskSandbox
		want     sandbox.Network
		required bool
	}{
		{messages.TaskSandbox{Network: "deny"}, sandbox.NetworkDeny, false},
		{messages.TaskSandbox{Network: "allow"}, sandbox.NetworkLoopback, false},
		{messages.TaskSandbox{Network: "loopback", Required: true}, sandbox.NetworkLoopback, true},
	}
	for _, c := range cases {
		rt := &runtime{}
		rt.toolCfg.Sandbox = node
		if err := rt.applySandbox(&c.ask, "worker"); err != nil {
			t.Fatal(err)
		}
		got := rt.toolCfg.Sandbox
		if got.NetworkFor("worker") != c.want || got.Required != c.required {
			t.Errorf("ask %+v: network %s required %v", c.ask, got.NetworkFor("worker"), got.Required)
		}
		if node.NetworkFor("worker") != sandbox.NetworkLoopback {
			t.Fatal("the node's own settings changed")
		}
	}
	rt := &runtime{}
	if err := rt.applySandbox(&messages.TaskSandbox{Network: "deny", Required: true}, "worker"); err == nil {
		t.Error("a node without a sandbox ran a task that requires one")
	}
	if err := rt.applySandbox(&messages.TaskSandbox{Network: "sideways"}, "worker"); err != nil {
		t.Errorf("no sandbox, not required: %v", err)
	}
	rt.toolCfg.Sandbox = node
	if err := rt.applySandbox(&messages.TaskSandbox{Network: "sideways"}, "worker"); err == nil {
		t.Error("a malformed network mode was taken")
	}
}
