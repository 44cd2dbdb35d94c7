package mcp_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/tools/mcp"
	"github.com/troupe-ai/troupe/tools/mcp/mcptest"
)

// The reference filesystem server, configured with ${TROUPE_TREE} as the
// directory it serves (a real Node.js process): the run's instance serves
// the workspace, an agent's instance in a tree of its own serves that
// tree. A write by a relative path lands in the agent's tree; one by an
// absolute path into the workspace is refused by the server itself; the
// workspace is untouched.
func TestFilesystemServerServesTheAgentsTree(t *testing.T) {
	user, tree := t.TempDir(), t.TempDir()
	cfg := mcp.Config{Name: "t", Command: mcptest.Filesystem(t, mcp.TreeRef), Dir: user}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	srv := mcp.New(cfg, zerolog.Nop())
	t.Cleanup(func() { _ = srv.Close() })
	worker, root := agentIn(t, srv, tree), agentIn(t, srv, user)
	realTree, _ := filepath.EvalSymlinks(tree)
	if r := worker.call(mcptest.FilesystemAllowed, `{}`); r.IsError || !strings.Contains(r.Text, realTree) || strings.Contains(r.Text, user) {
		t.Errorf("the worker's instance serves %q, want only %s", r.Text, realTree)
	}
	if r := worker.call(mcptest.FilesystemWrite, `{"path":"notes.txt","content":"from the worker\n"}`); r.IsError {
		t.Fatalf("write in the tree: %+v", r)
	}
	if b, err := os.ReadFile(filepath.Join(tree, "notes.txt")); err != nil || string(b) != "from the worker\n" {
		t.Errorf("notes.txt in the tree: %q, %v", b, err)
	}
	attack := filepath.Join(user, "attack.txt")
	if r := worker.call(mcptest.FilesystemWrite, `{"path":"`+attack+`","content":"x"}`); !r.IsError || !strings.Contains(r.Text, "outside allowed directories") {
		t.Errorf("a write into the workspace: %+v", r)
	}
	for _, f := range []string{attack, filepath.Join(user, "notes.txt")} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was written: %v", f, err)
		}
	}
	if r := root.call(mcptest.FilesystemAllowed, `{}`); r.IsError || !strings.Contains(r.Text, user) {
		t.Errorf("the run's instance serves %q, want %s", r.Text, user)
	}
	if r := root.call(mcptest.FilesystemWrite, `{"path":"root.txt","content":"r"}`); r.IsError {
		t.Fatalf("write in the workspace: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(user, "root.txt")); err != nil {
		t.Errorf("the run's instance wrote elsewhere: %v", err)
	}
}

// Every instance's environment holds TROUPE_TREE, its tree, and
// ${TROUPE_TREE} in env values and arguments is replaced by it; a
// variable of that name in our own environment never reaches a server.
func TestTreeIsInEveryInstancesEnvironment(t *testing.T) {
	t.Setenv(mcp.TreeVar, "/ours")
	user, tree := t.TempDir(), t.TempDir()
	srv := stdioServer(t, func(c *mcp.Config) {
		c.Dir = user
		c.Env["DATA"] = mcp.TreeRef + "/data"
	})
	worker, root := agentIn(t, srv, tree), agentIn(t, srv, user)
	realTree, _ := filepath.EvalSymlinks(tree)
	for _, c := range []struct {
		h    *harness
		want string
	}{{worker, realTree}, {root, user}} {
		if r := c.h.call(mcptest.ReadEnv, `{"name":"TROUPE_TREE"}`); r.Text != c.want {
			t.Errorf("TROUPE_TREE %q, want %s", r.Text, c.want)
		}
		if r := c.h.call(mcptest.ReadEnv, `{"name":"DATA"}`); r.Text != c.want+"/data" {
			t.Errorf("DATA %q, want %s/data", r.Text, c.want)
		}
	}
}

// A config that puts ${TROUPE_TREE} where it cannot be is refused, naming
// the key: as the program (the tree is the agent's to write), a mistyped
// ${TROUPE_...}, TROUPE_TREE set in env, in an HTTP server's headers, or
// with no directory to fill in.
func TestTreeRefMisuseIsRefused(t *testing.T) {
	for _, c := range []struct {
		cfg  mcp.Config
		want string
	}{
		{mcp.Config{Name: "a", Command: []string{mcp.TreeRef + "/server"}, Dir: "/w"}, "command[0]"},
		{mcp.Config{Name: "a", Command: []string{"srv", "--root", "${TROUPE_TRE}"}, Dir: "/w"}, "command[2]: unknown placeholder ${TROUPE_TRE}"},
		{mcp.Config{Name: "a", Command: []string{"srv"}, Env: map[string]string{"TROUPE_TREE": "/"}, Dir: "/w"}, "env.TROUPE_TREE"},
		{mcp.Config{Name: "a", URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"X-Root": mcp.TreeRef}}, "headers.X-Root"},
		{mcp.Config{Name: "a", Command: []string{"srv", mcp.TreeRef}}, "no directory"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	ok := mcp.Config{Name: "a", Command: []string{"srv", "--root=" + mcp.TreeRef, "${HOME}"}, Env: map[string]string{"D": mcp.TreeRef}, Dir: "/w"}
	if err := ok.Validate(); err != nil {
		t.Errorf("a valid use: %v", err)
	}
}
