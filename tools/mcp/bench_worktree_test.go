package mcp_test

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/mcp"
	"github.com/troupe-ai/troupe/tools/mcp/mcptest"
)

// BenchmarkWorktreeInstance is what an agent in a worktree pays for its
// own instance of a server: the start on its first call, the call, and
// the stop when its session closes; "warm" is a call on a running one.
func BenchmarkWorktreeInstance(b *testing.B) {
	srv := mcp.New(mcp.Config{Name: "t", Command: mcptest.Command(), Env: mcptest.Env(), Dir: b.TempDir()}, zerolog.Nop())
	b.Cleanup(func() { _ = srv.Close() })
	ts, err := srv.Tools(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	reg := tools.NewRegistry(ts...)
	echo := callOf(mcp.ToolName("t", mcptest.Echo), `{"text":"x"}`)
	session := func() *tools.Session {
		ws, err := tools.NewWorkspace(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = ws.Close() })
		return tools.NewSession("w", ws, tools.Config{DataDir: b.TempDir()})
	}
	b.Run("start-call-stop", func(b *testing.B) {
		for b.Loop() {
			s := session()
			if r := (&tools.Executor{Tools: reg, Session: s}).Run(b.Context(), echo)[0]; r.IsError {
				b.Fatal(r.Text)
			}
			_ = s.Close()
		}
	})
	b.Run("warm", func(b *testing.B) {
		s := session()
		defer s.Close()
		ex := &tools.Executor{Tools: reg, Session: s}
		ex.Run(b.Context(), echo)
		for b.Loop() {
			if r := ex.Run(b.Context(), echo)[0]; r.IsError {
				b.Fatal(r.Text)
			}
		}
	})
}
