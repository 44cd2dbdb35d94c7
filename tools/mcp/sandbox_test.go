//go:build linux

package mcp_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/mcp"
	"github.com/troupe-ai/troupe/tools/mcp/mcptest"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// A stdio server started with a sandbox writes in its workspace but not
// outside it, and its private TMPDIR goes with it.
func TestSandboxedServer(t *testing.T) {
	s := sandbox.Check()
	if s.LandlockABI == 0 {
		peer.Missing(t, "Landlock", "the sandbox test needs a kernel with Landlock")
	}
	ws, outside := t.TempDir(), t.TempDir()
	box := sandbox.NewBox(sandbox.Policy{Writable: []string{ws}, Network: sandbox.NetworkAllow}, s, t.TempDir())
	srv := stdioServer(t, func(c *mcp.Config) { c.Dir, c.Sandbox = ws, box })
	h := newHarness(t, srv, tools.Config{})
	if r := h.call(mcptest.WriteFile, `{"path":"`+filepath.Join(ws, "in.txt")+`"}`); !strings.Contains(r.Text, "wrote") {
		t.Errorf("write in the workspace: %s", r.Text)
	}
	target := filepath.Join(outside, "out.txt")
	if r := h.call(mcptest.WriteFile, `{"path":"`+target+`"}`); !strings.Contains(r.Text, "permission denied") {
		t.Errorf("write outside: %s", r.Text)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was created: %v", target, err)
	}
	tmp := h.call(mcptest.ReadEnv, `{"name":"TMPDIR"}`).Text
	if r := h.call(mcptest.WriteFile, `{"path":"`+filepath.Join(tmp, "t")+`"}`); !strings.Contains(r.Text, "wrote") {
		t.Errorf("write in TMPDIR %s: %s", tmp, r.Text)
	}
	_ = srv.Close()
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("TMPDIR %s outlived the server: %v", tmp, err)
	}
}

// An agent's instance in its tree is confined to that tree: a write by
// "../" or by an absolute path into the run's workspace is refused, one in
// the tree works.
func TestWorktreeInstanceIsSandboxedToItsTree(t *testing.T) {
	s := sandbox.Check()
	if s.LandlockABI == 0 {
		peer.Missing(t, "Landlock", "the sandbox test needs a kernel with Landlock")
	}
	user, parent := t.TempDir(), t.TempDir()
	tree := filepath.Join(parent, "tree")
	if err := os.Mkdir(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	settings := sandbox.Settings{Support: s, Network: map[string]sandbox.Network{"default": sandbox.NetworkAllow}}
	srv := stdioServer(t, func(c *mcp.Config) {
		c.Dir = user
		c.Sandbox = settings.Box("mcp", user)
		c.SandboxIn = func(inside, view string) *sandbox.Box { return settings.BoxIn("mcp", inside, view) }
	})
	h := agentIn(t, srv, tree)
	if r := h.call(mcptest.WriteFile, `{"path":"in.txt"}`); r.Text != "wrote in.txt" {
		t.Errorf("write in the tree: %+v", r)
	}
	for _, target := range []string{"../escape.txt", filepath.Join(user, "attack.txt")} {
		if r := h.call(mcptest.WriteFile, `{"path":"`+target+`"}`); !strings.Contains(r.Text, "permission denied") {
			t.Errorf("write %s: %+v", target, r)
		}
	}
	for _, f := range []string{filepath.Join(parent, "escape.txt"), filepath.Join(user, "attack.txt")} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was written: %v", f, err)
		}
	}
}
