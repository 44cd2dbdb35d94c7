//go:build linux

package actors_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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

// A worker in a worktree of its own (an overlay, and a checkout) that
// writes a file through an MCP tool writes it in its worktree, through
// its own instance of the server started there and sandboxed to it: the
// user's workspace does not have the file until the worker's changes
// land, through the normal path; writes by "../" or by an absolute path
// into the workspace are refused; the instance is stopped before the
// worktree is captured (what it writes as it exits lands too) and has
// ended by the time the run returns, while the run's instance (the
// test's) still serves.
func TestWorkerMCPToolsActInItsWorktree(t *testing.T) {
	sup := sandbox.Check()
	if sup.LandlockABI == 0 {
		peer.Missing(t, "Landlock", "the MCP sandbox test needs a kernel with Landlock")
	}
	bin := mcptest.Build(t)
	for _, wk := range []string{"overlay", "checkout"} {
		t.Run(wk, func(t *testing.T) {
			if wk == "overlay" {
				if _, err := overlay.Shared(filepath.Join(os.TempDir(), "troupe-actors-overlay-test")); err != nil {
					peer.Missing(t, "overlay mounts", "%v", err)
				}
			}
			ws := gitRepo(t, map[string]string{"g.go": "package p\n"})
			settings := &sandbox.Settings{Support: sup, Network: map[string]sandbox.Network{"default": sandbox.NetworkAllow}}
			server := mcp.New(mcp.Config{Name: "t", Command: []string{bin}, Dir: ws, Kinds: []string{"root", "worker"},
				Sandbox: settings.Box("mcp", ws), SandboxIn: func(in, view string) *sandbox.Box { return settings.BoxIn("mcp", in, view) }},
				zerolog.Nop())
			t.Cleanup(func() { _ = server.Close() })
			attack := filepath.Join(ws, "attack.txt")
			w := llmtest.AgentScript{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
				calls(tc("mcp__t__write_file", `{"path":"mcp.txt","content":"from the worker\n"}`), tc("mcp__t__write_at_exit", `{"path":"late.txt"}`)),
				calls(tc("mcp__t__read_file", `{"path":"`+filepath.Join(ws, "mcp.txt")+`"}`), tc("mcp__t__read_file", `{"path":"mcp.txt"}`),
					tc("mcp__t__cwd", `{}`), tc("mcp__t__pid", `{}`),
					tc("mcp__t__write_file", `{"path":"../escape.txt"}`), tc("mcp__t__write_file", `{"path":"`+attack+`"}`)),
				say("done"),
			}}
			srv := llmtest.New(script(kind("root", calls(delegate("worker", "write through MCP", false)), say("all done")), w))
			t.Cleanup(srv.Close)
			o := options(t, srv, ws, "change things", &actors.Recorder{})
			o.Settings.PlanFirst = map[string]bool{"root": false, "worker": false}
			o.Settings.Isolation = "worktree"
			o.Settings.Worktrees = wk
			o.ToolSources = []tools.ToolSource{server}
			o.Tools.Tiers = tools.Tiers{Budget: -1}
			res := run(t, o)
			var got []string
			for _, r := range srv.Requests() {
				if r.Kind == "worker" && r.Round == 3 {
					got = toolResults(r)
				}
			}
			if len(got) != 6 {
				t.Fatalf("the worker's MCP results: %q", got)
			}
			if !strings.Contains(got[0], "no such file") {
				t.Errorf("the workspace had the worker's file before landing: %q", got[0])
			}
			if got[1] != "from the worker\n" || got[2] == ws || !strings.HasPrefix(got[2], "/") {
				t.Errorf("the worker's instance reads %q in %q (the workspace is %s)", got[1], got[2], ws)
			}
			for _, r := range got[4:] {
				if !strings.Contains(r, "permission denied") {
					t.Errorf("a write out of the worktree: %q", r)
				}
			}
			// late.txt is written as the instance exits: it was stopped
			// before the worktree was captured.
			if len(res.Changes) != 1 || res.Changes[0].Status != messages.ChangeStatusApplied || !has(res.Changes[0].Files, "mcp.txt") ||
				!has(res.Changes[0].Files, "late.txt") {
				t.Fatalf("changes %+v, want mcp.txt and late.txt applied", res.Changes)
			}
			if b, err := os.ReadFile(filepath.Join(ws, "mcp.txt")); err != nil || string(b) != "from the worker\n" {
				t.Errorf("mcp.txt in the workspace: %q, %v", b, err)
			}
			for _, f := range []string{attack, filepath.Join(filepath.Dir(got[2]), "escape.txt")} {
				if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s was written: %v", f, err)
				}
			}
			pid, err := strconv.Atoi(got[3])
			if err != nil || pid <= 1 {
				t.Fatalf("pid %q", got[3])
			}
			checkFor(t, 10*time.Second, func() error {
				if syscall.Kill(pid, 0) == nil {
					return errors.New("the worker's MCP server outlived the worker")
				}
				return nil
			})
			if server.Worktrees() != 0 || server.Pid() == 0 || server.Pid() == pid {
				t.Errorf("%d worktree instances open; the run's instance %d, the worker's %d", server.Worktrees(), server.Pid(), pid)
			}
		})
	}
}

// Many workers in worktrees calling one MCP server at once never run
// more instances than the limit; each writes in its own worktree, every
// change lands, and no instance outlives the run.
func TestWorkersShareBoundedMCPInstances(t *testing.T) {
	const workers, most = 6, 2
	ws := gitRepo(t, map[string]string{"g.go": "package p\n"})
	limit := mcp.NewLimit(most)
	server := mcp.New(mcp.Config{Name: "t", Command: []string{mcptest.Build(t)}, Dir: ws, Limit: limit}, zerolog.Nop())
	t.Cleanup(func() { _ = server.Close() })
	fan := make([]llmtest.ToolCall, workers)
	agents := []llmtest.AgentScript{kind("root", calls(fan...), say("started"))}
	for w := range workers {
		task := fmt.Sprintf("task w%02d-", w)
		fan[w] = delegate("worker", task, true)
		agents = append(agents, llmtest.AgentScript{Match: llmtest.Matcher{Kind: "worker", TaskContains: task},
			Turns: []llmtest.Turn{calls(tc("mcp__t__write_file", fmt.Sprintf(`{"path":"w%02d.txt","content":"%d\n"}`, w, w))),
				calls(tc("mcp__t__pid", `{}`)), say("done")}})
	}
	srv := llmtest.New(script(agents...))
	t.Cleanup(srv.Close)
	o := options(t, srv, ws, "fan out", &actors.Recorder{})
	o.Settings.PlanFirst = map[string]bool{"root": false, "worker": false}
	o.Settings.Isolation, o.Settings.OnParentFinish = "worktree", "wait"
	o.ToolSources = []tools.ToolSource{server}
	o.Tools.Tiers = tools.Tiers{Budget: -1}
	res := run(t, o)
	applied := 0
	for _, c := range res.Changes {
		if c.Status == messages.ChangeStatusApplied && len(c.Files) == 1 {
			applied++
		}
	}
	if applied != workers {
		t.Errorf("%d of %d changes applied: %+v", applied, workers, res.Changes)
	}
	for w := range workers {
		if b, err := os.ReadFile(filepath.Join(ws, fmt.Sprintf("w%02d.txt", w))); err != nil || string(b) != fmt.Sprintf("%d\n", w) {
			t.Errorf("w%02d.txt: %q, %v", w, b, err)
		}
	}
	var pids []int
	for _, r := range srv.Requests() {
		if r.Kind == "worker" && r.Round == 3 {
			got := toolResults(r)
			pid, err := strconv.Atoi(got[len(got)-1])
			if err != nil {
				t.Fatalf("pid result %q", got)
			}
			pids = append(pids, pid)
		}
	}
	if len(pids) != workers {
		t.Fatalf("%d pids", len(pids))
	}
	if limit.Peak() > most || limit.Peak() == 0 || limit.Live() != 0 || server.Worktrees() != 0 {
		t.Errorf("peak %d instances (limit %d), %d live, %d open after the run", limit.Peak(), most, limit.Live(), server.Worktrees())
	}
	checkFor(t, 10*time.Second, func() error {
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				return fmt.Errorf("instance %d outlived its worker", pid)
			}
		}
		return nil
	})
}
