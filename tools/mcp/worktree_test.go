package mcp_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/mcp"
	"github.com/troupe-ai/troupe/tools/mcp/mcptest"
)

// agentIn is the harness of an agent whose tools work in dir (a worktree
// of its own when dir is not the server's).
func agentIn(t *testing.T, srv *mcp.Server, dir string) *harness {
	t.Helper()
	ts, err := srv.Tools(t.Context())
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	ws, err := tools.NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	sess := tools.NewSession("agent", ws, tools.Config{DataDir: t.TempDir()})
	t.Cleanup(func() { _ = sess.Close() })
	return &harness{t: t, srv: srv, ex: &tools.Executor{Tools: tools.NewRegistry(ts...), Session: sess}}
}

// pidOf asks the server that acts for h for its process ID.
func pidOf(t *testing.T, h *harness) int {
	t.Helper()
	r := h.call(mcptest.Pid, `{}`)
	pid, err := strconv.Atoi(r.Text)
	if err != nil || pid <= 0 {
		t.Fatalf("pid: %+v", r)
	}
	return pid
}

// An agent in a tree of its own gets an instance of the server started
// there: what it writes by a relative path lands in its tree, never in the
// run's workspace nor in another agent's tree, and it cannot read what
// another agent's instance wrote; the agent in the workspace keeps the
// run's instance. Each instance ends when its agent's session closes.
func TestWorktreeInstanceActsInTheAgentsTree(t *testing.T) {
	user, treeA, treeB := t.TempDir(), t.TempDir(), t.TempDir()
	srv := stdioServer(t, func(c *mcp.Config) { c.Dir = user })
	a, b, root := agentIn(t, srv, treeA), agentIn(t, srv, treeB), agentIn(t, srv, user)
	if r := a.call(mcptest.WriteFile, `{"path":"a.txt","content":"from A"}`); r.Text != "wrote a.txt" {
		t.Fatalf("write in A's tree: %+v", r)
	}
	if r := b.call(mcptest.ReadFile, `{"path":"a.txt"}`); !strings.Contains(r.Text, "no such file") {
		t.Errorf("B read A's file: %+v", r)
	}
	if got, err := os.ReadFile(filepath.Join(treeA, "a.txt")); err != nil || string(got) != "from A" {
		t.Errorf("A's tree: %q, %v", got, err)
	}
	for _, dir := range []string{user, treeB} {
		if _, err := os.Stat(filepath.Join(dir, "a.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("A's write reached %s: %v", dir, err)
		}
	}
	if r := b.call(mcptest.Cwd, `{}`); r.Text != treeB {
		t.Errorf("B's instance works in %q, want %s", r.Text, treeB)
	}
	if got := pidOf(t, root); got != srv.Pid() {
		t.Errorf("the agent in the workspace got process %d, not the run's %d", got, srv.Pid())
	}
	pidA, pidB := pidOf(t, a), pidOf(t, b)
	if pidA == pidB || pidA == srv.Pid() || srv.Worktrees() != 2 {
		t.Fatalf("pids A %d, B %d, run %d; %d worktree instances", pidA, pidB, srv.Pid(), srv.Worktrees())
	}
	if err := a.ex.Session.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pidA)
	if !alive(pidB) || srv.Worktrees() != 1 {
		t.Errorf("B's instance alive %v; %d worktree instances", alive(pidB), srv.Worktrees())
	}
	if r := a.call(mcptest.Echo, `{"text":"late"}`); !r.IsError {
		t.Errorf("a call after the agent ended: %+v", r)
	}
	if err := srv.Close(); err != nil { // the run ends before B's session closes
		t.Fatal(err)
	}
	waitGone(t, pidB)
	if srv.Worktrees() != 0 {
		t.Errorf("%d worktree instances after Close", srv.Worktrees())
	}
}

// A server configured shared keeps one instance, in the workspace, for
// every agent.
func TestSharedServerKeepsOneInstance(t *testing.T) {
	user := t.TempDir()
	srv := stdioServer(t, func(c *mcp.Config) { c.Dir, c.Shared = user, true })
	a := agentIn(t, srv, t.TempDir())
	if r := a.call(mcptest.Cwd, `{}`); r.Text != user || srv.Worktrees() != 0 {
		t.Errorf("cwd %q, %d worktree instances", r.Text, srv.Worktrees())
	}
}

// Worktree instances are bounded: with a limit of one, an agent's first
// call stops another agent's idle instance to take its slot, and while
// that one is in a call, a third agent's call waits and then fails,
// naming the limit; never more than one runs.
func TestWorktreeInstancesAreBounded(t *testing.T) {
	user := t.TempDir()
	limit := mcp.NewLimit(1)
	srv := stdioServer(t, func(c *mcp.Config) { c.Dir, c.Limit = user, limit })
	a, b := agentIn(t, srv, t.TempDir()), agentIn(t, srv, t.TempDir())
	pidA := pidOf(t, a)
	pidB := pidOf(t, b)
	waitGone(t, pidA)
	instA, err := srv.InstanceOf(a.ex.Session)
	if err != nil {
		t.Fatal(err)
	}
	if instA.Evictions() != 1 || !alive(pidB) {
		t.Errorf("A evicted %d times; B alive %v", instA.Evictions(), alive(pidB))
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var slow tools.Result
	wg.Go(func() { slow = a.ex.Run(ctx, callOf(mcp.ToolName("t", mcptest.Slow), `{}`))[0] })
	deadline := time.Now().Add(30 * time.Second)
	for !instA.InCall() {
		if time.Now().After(deadline) {
			t.Fatal("A's call never started")
		}
		<-time.After(5 * time.Millisecond)
	}
	waitGone(t, pidB)
	c := agentIn(t, srv, t.TempDir())
	short, stop := context.WithTimeout(t.Context(), time.Second)
	defer stop()
	r := c.ex.Run(short, callOf(mcp.ToolName("t", mcptest.Echo), `{"text":"x"}`))[0]
	if !r.IsError || !strings.Contains(r.Text, "mcp.max_worktree_servers") {
		t.Errorf("a call beyond the limit: %+v", r)
	}
	cancel()
	wg.Wait()
	if slow.IsError && !strings.Contains(slow.Text, "cancel") {
		t.Errorf("A's slow call: %+v", slow)
	}
	if r := c.call(mcptest.Echo, `{"text":"now"}`); r.Text != "echo: now" {
		t.Errorf("once A's call ended: %+v", r)
	}
	if limit.Peak() != 1 {
		t.Errorf("peak %d instances at once, limit 1", limit.Peak())
	}
}
