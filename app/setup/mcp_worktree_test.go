//go:build linux

package setup

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/mcp"
	"github.com/troupe-ai/troupe/tools/mcp/mcptest"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// The configured servers give an agent in another tree (a worktree) an
// instance of its own there, sandboxed to that tree by the config's
// sandbox; shared: true keeps the workspace's instance.
func TestConfiguredMCPServerFollowsTheAgentsTree(t *testing.T) {
	if sandbox.Check().LandlockABI == 0 {
		peer.Missing(t, "Landlock", "the sandbox test needs a kernel with Landlock")
	}
	t.Setenv("XDG_STATE_HOME", filepath.Join(t.TempDir(), "state"))
	bin := mcptest.Build(t)
	cfg, err := config.Load(config.Sources{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.MCP.Servers = map[string]config.MCPServer{"fs": {Command: []string{bin}}, "api": {Command: []string{bin}, Shared: true}}
	user, tree := t.TempDir(), t.TempDir()
	srcs, err := MCPServers(cfg, user, nil, func(string) string { return "" }, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { CloseToolSources(srcs) })
	var all []tools.Tool
	for _, s := range srcs {
		ts, err := s.Tools(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ts...)
	}
	ws, err := tools.NewWorkspace(tree)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	sess := tools.NewSession("worker", ws, tools.Config{DataDir: t.TempDir()})
	t.Cleanup(func() { _ = sess.Close() })
	ex := &tools.Executor{Tools: tools.NewRegistry(all...), Session: sess}
	call := func(server, tool, args string) string {
		t.Helper()
		return ex.Run(t.Context(), []messages.ToolCall{{ID: "c", Name: mcp.ToolName(server, tool), Args: json.RawMessage(args)}})[0].Text
	}
	realTree, _ := filepath.EvalSymlinks(tree)
	if got := call("fs", mcptest.Cwd, `{}`); got != realTree {
		t.Errorf("fs works in %q, want the agent's tree %s", got, realTree)
	}
	if got := call("api", mcptest.Cwd, `{}`); got != user {
		t.Errorf("the shared server works in %q, want the workspace %s", got, user)
	}
	attack := filepath.Join(user, "attack.txt")
	if got := call("fs", mcptest.WriteFile, `{"path":"`+attack+`"}`); !strings.Contains(got, "permission denied") {
		t.Errorf("a write into the workspace: %q", got)
	}
	if _, err := os.Stat(attack); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was written: %v", attack, err)
	}
}

// ${TROUPE_TREE} in a configured server's env is the tree of the
// instance, never a variable of ours of that name: the run's instance
// reads the workspace, an agent's in a worktree reads its tree.
func TestConfiguredTreeRefIsTheInstancesTree(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", filepath.Join(t.TempDir(), "state"))
	cfg, err := config.Load(config.Sources{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sandbox.Mode = "off"
	cfg.MCP.Servers = map[string]config.MCPServer{"fs": {Command: []string{mcptest.Build(t)},
		Env: map[string]string{"DATA": config.TreeRef + "/data", "HOME_OF": "${HOME}"}}}
	user, tree := t.TempDir(), t.TempDir()
	ours := map[string]string{"TROUPE_TREE": "/ours", "HOME": "/home/u"}
	srcs, err := MCPServers(cfg, user, nil, func(k string) string { return ours[k] }, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { CloseToolSources(srcs) })
	ts, err := srcs[0].Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	realTree, _ := filepath.EvalSymlinks(tree)
	for dir, want := range map[string]string{tree: realTree, user: user} {
		ws, err := tools.NewWorkspace(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ws.Close() })
		sess := tools.NewSession("worker", ws, tools.Config{DataDir: t.TempDir()})
		t.Cleanup(func() { _ = sess.Close() })
		ex := &tools.Executor{Tools: tools.NewRegistry(ts...), Session: sess}
		read := func(name string) string {
			return ex.Run(t.Context(), []messages.ToolCall{{ID: "c", Name: mcp.ToolName("fs", mcptest.ReadEnv), Args: json.RawMessage(`{"name":"` + name + `"}`)}})[0].Text
		}
		if got := read("DATA"); got != want+"/data" {
			t.Errorf("DATA in %s: %q, want %s/data", dir, got, want)
		}
		if got := read("HOME_OF"); got != "/home/u" {
			t.Errorf("HOME_OF: %q", got)
		}
	}
}
