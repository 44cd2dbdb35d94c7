//go:build linux

package actors_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/overlay"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/mcp"
	"github.com/troupe-ai/troupe/tools/mcp/mcptest"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// The reference filesystem server, configured to serve ${TROUPE_TREE} (as
// a user writes [npx, @modelcontextprotocol/server-filesystem, DIR]): a
// worker in a worktree of its own (an overlay, and a checkout) gets an
// instance serving its worktree, sandboxed to it. What it writes there
// by a relative path is not in the user's workspace while the worker
// runs (another server reads the workspace to see), and lands with the
// worker's changes at its end.
func TestWorkerFilesystemServerServesItsWorktree(t *testing.T) {
	sup := sandbox.Check()
	if sup.LandlockABI == 0 {
		peer.Missing(t, "Landlock", "the MCP sandbox test needs a kernel with Landlock")
	}
	fsCmd, bin := mcptest.Filesystem(t, mcp.TreeRef), mcptest.Build(t)
	for _, wk := range []string{"overlay", "checkout"} {
		t.Run(wk, func(t *testing.T) {
			if wk == "overlay" {
				if _, err := overlay.Shared(filepath.Join(os.TempDir(), "troupe-actors-overlay-test")); err != nil {
					peer.Missing(t, "overlay mounts", "%v", err)
				}
			}
			ws := gitRepo(t, map[string]string{"g.go": "package p\n", "docs/README.md": "docs\n"})
			settings := &sandbox.Settings{Support: sup, Network: map[string]sandbox.Network{"default": sandbox.NetworkAllow}}
			var servers []tools.ToolSource
			for name, cmd := range map[string][]string{"fs": fsCmd, "t": {bin}} {
				s := mcp.New(mcp.Config{Name: name, Command: cmd, Dir: ws, Kinds: []string{"root", "worker"},
					Sandbox: settings.Box("mcp", ws), SandboxIn: func(in, view string) *sandbox.Box { return settings.BoxIn("mcp", in, view) }},
					zerolog.Nop())
				t.Cleanup(func() { _ = s.Close() })
				servers = append(servers, s)
			}
			w := llmtest.AgentScript{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
				calls(tc("mcp__fs__write_file", `{"path":"docs/fs.txt","content":"through the filesystem server\n"}`)),
				calls(tc("mcp__fs__list_allowed_directories", `{}`), tc("mcp__t__read_file", `{"path":"`+filepath.Join(ws, "docs", "fs.txt")+`"}`)),
				say("done"),
			}}
			srv := llmtest.New(script(kind("root", calls(delegate("worker", "write through the filesystem server", false)), say("all done")), w))
			t.Cleanup(srv.Close)
			o := options(t, srv, ws, "change things", &actors.Recorder{})
			o.Settings.PlanFirst = map[string]bool{"root": false, "worker": false}
			o.Settings.Isolation = "worktree"
			o.Settings.Worktrees = wk
			o.ToolSources = servers
			o.Tools.Tiers = tools.Tiers{Budget: -1}
			res := run(t, o)
			var wrote, after []string
			for _, r := range srv.Requests() {
				switch {
				case r.Kind == "worker" && r.Round == 2:
					wrote = toolResults(r)
				case r.Kind == "worker" && r.Round == 3:
					after = toolResults(r)
				}
			}
			if len(wrote) != 1 || !strings.Contains(wrote[0], "Successfully wrote") {
				t.Fatalf("the worker's write: %q", wrote)
			}
			if len(after) != 2 || strings.Contains(after[0], ws+"\n") || strings.HasSuffix(after[0], ws) {
				t.Fatalf("the worker's instance serves %q (the workspace is %s)", after, ws)
			}
			if !strings.Contains(after[1], "no such file") {
				t.Errorf("the workspace had the worker's file before landing: %q", after[1])
			}
			if len(res.Changes) != 1 || res.Changes[0].Status != messages.ChangeStatusApplied || !has(res.Changes[0].Files, "docs/fs.txt") {
				t.Fatalf("changes %+v, want docs/fs.txt applied", res.Changes)
			}
			if b, err := os.ReadFile(filepath.Join(ws, "docs", "fs.txt")); err != nil || string(b) != "through the filesystem server\n" {
				t.Errorf("docs/fs.txt in the workspace: %q, %v", b, err)
			}
		})
	}
}
