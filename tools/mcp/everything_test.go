package mcp_test

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/mcp"
	"github.com/troupe-ai/troupe/tools/mcp/mcptest"
)

// The reference MCP server, @modelcontextprotocol/server-everything (a
// real Node.js process, installed by tests/run.sh): its tools list, their
// schemas sanitise, calls answer, images are summarised, and it never sees
// our secrets.
func TestServerEverything(t *testing.T) {
	cmd := mcptest.Everything(t)
	t.Setenv("OPENAI_API_KEY", "sk-never-for-servers")
	cfg := mcp.Config{Name: "everything", Command: cmd, Dir: t.TempDir(), Env: map[string]string{"GIVEN_ON_PURPOSE": "yes"}}
	srv := mcp.New(cfg, zerolog.Nop())
	t.Cleanup(func() { _ = srv.Close() })
	ts, err := srv.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) < 10 || len(srv.Skipped()) > 0 {
		t.Errorf("%d tools, skipped %v", len(ts), srv.Skipped())
	}
	for _, tool := range ts {
		if s := string(tool.Spec().SchemaJSON()); strings.Contains(s, "$schema") || !strings.HasPrefix(tool.Spec().Name, "mcp__everything__") {
			t.Errorf("%s: %s", tool.Spec().Name, s)
		}
	}
	ws, err := tools.NewWorkspace(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	ex := &tools.Executor{Tools: tools.NewRegistry(ts...), Session: tools.NewSession("test", ws, tools.Config{DataDir: t.TempDir()})}
	h := &harness{t: t, srv: srv, ex: ex}
	call := func(tool, args string) tools.Result {
		t.Helper()
		return h.ex.Run(t.Context(), callOf(mcp.ToolName("everything", tool), args))[0]
	}
	if r := call(mcptest.EverythingEcho, `{"message":"hi"}`); r.IsError || r.Text != "Echo: hi" {
		t.Errorf("echo: %+v", r)
	}
	if r := call(mcptest.EverythingSum, `{"a":2,"b":"3"}`); r.IsError || !strings.Contains(r.Text, "5") {
		t.Errorf("get-sum: %+v", r)
	}
	if r := call(mcptest.EverythingEcho, `{}`); !r.IsError || !strings.Contains(r.Text, `field "message" is required`) {
		t.Errorf("echo without message: %+v", r)
	}
	if r := call(mcptest.EverythingImage, `{}`); r.IsError || !strings.Contains(r.Text, "[image: image/png") || len(r.Text) > 2000 {
		t.Errorf("get-tiny-image: %+v", r)
	}
	r := call(mcptest.EverythingEnv, `{}`)
	if r.IsError || strings.Contains(r.Text, "sk-never-for-servers") || !strings.Contains(r.Text, "GIVEN_ON_PURPOSE") {
		t.Errorf("get-env leaks or misses: %.500s", r.Text)
	}
	pid := srv.Pid()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
}
