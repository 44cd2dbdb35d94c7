package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/mcp"
	"github.com/troupe-ai/troupe/tools/mcp/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.ServeIfAsked()
	os.Exit(m.Run())
}

// stdioServer is the test server as a real subprocess, closed with the test.
func stdioServer(t *testing.T, edit ...func(*mcp.Config)) *mcp.Server {
	t.Helper()
	cfg := mcp.Config{Name: "t", Command: mcptest.Command(), Env: mcptest.Env(), Dir: t.TempDir()}
	for _, e := range edit {
		e(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := mcp.New(cfg, zerolog.Nop())
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// harness runs calls as an agent would: through the executor, with the
// server's tools as the registry.
type harness struct {
	t   *testing.T
	srv *mcp.Server
	ex  *tools.Executor
}

func newHarness(t *testing.T, srv *mcp.Server, cfg tools.Config) *harness {
	t.Helper()
	ts, err := srv.Tools(t.Context())
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	dir := srv.Dir() // the agent works in the server's workspace
	if dir == "" {
		dir = t.TempDir()
	}
	ws, err := tools.NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	sess := tools.NewSession("test", ws, cfg)
	return &harness{t: t, srv: srv, ex: &tools.Executor{Tools: tools.NewRegistry(ts...), Session: sess}}
}

func (h *harness) call(tool, args string) tools.Result {
	h.t.Helper()
	return h.ex.Run(h.t.Context(), callOf(mcp.ToolName("t", tool), args))[0]
}

func callOf(name, args string) []messages.ToolCall {
	return []messages.ToolCall{{ID: "c1", Name: name, Args: json.RawMessage(args)}}
}

func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

// waitGone polls until pid no longer exists.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still exists", pid)
		}
		<-time.After(5 * time.Millisecond)
	}
}

func TestStartsLazilyAndListsTools(t *testing.T) {
	srv := stdioServer(t)
	if srv.Starts() != 0 || srv.Pid() != 0 {
		t.Fatal("the server started before anything needed it")
	}
	ts, err := srv.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if srv.Starts() != 1 || !alive(srv.Pid()) {
		t.Fatalf("starts %d, pid %d", srv.Starts(), srv.Pid())
	}
	specs := map[string]tools.Spec{}
	for _, tool := range ts {
		specs[tool.Spec().Name] = tool.Spec()
	}
	for _, name := range []string{mcptest.Echo, mcptest.Add, mcptest.Refs, mcptest.TopAnyOf, mcptest.Crash} {
		if _, ok := specs[mcp.ToolName("t", name)]; !ok {
			t.Errorf("%s missing from %v", name, ts)
		}
	}
	if !specs["mcp__t__add"].ReadOnly || specs["mcp__t__echo"].ReadOnly {
		t.Error("readOnlyHint not carried into the spec")
	}
	if specs["mcp__t__add"].Replayable() {
		t.Error("an MCP tool is replayable: another program's calls must not start before their step is saved")
	}
	odd := mcp.ToolName("t", mcptest.OddName)
	if _, ok := specs[odd]; !ok || !strings.HasPrefix(odd, "mcp__t__odd_name_v2_") {
		t.Errorf("odd name %q not listed", odd)
	}
	skipped := strings.Join(srv.Skipped(), "\n")
	for _, name := range []string{mcptest.Giant, mcptest.Remote} {
		if _, ok := specs[mcp.ToolName("t", name)]; ok || !strings.Contains(skipped, name) {
			t.Errorf("%s should be skipped with a reason; skipped: %s", name, skipped)
		}
	}
	var refs map[string]any
	if err := json.Unmarshal(specs["mcp__t__refs"].Schema, &refs); err != nil {
		t.Fatal(err)
	}
	at := refs["properties"].(map[string]any)["at"].(map[string]any)
	if at["type"] != "object" || at["properties"] == nil || strings.Contains(string(specs["mcp__t__refs"].Schema), "$") {
		t.Errorf("$ref not inlined: %s", specs["mcp__t__refs"].Schema)
	}
	again, _ := srv.Tools(t.Context())
	if len(again) != len(ts) || srv.Starts() != 1 {
		t.Error("a second listing started the server again")
	}
}

func TestCallsAndBadArguments(t *testing.T) {
	h := newHarness(t, stdioServer(t), tools.Config{})
	if r := h.call(mcptest.Echo, `{"text":"hi"}`); r.IsError || r.Text != "echo: hi" || r.Metadata["mcp_server"] != "t" {
		t.Errorf("echo: %+v", r)
	}
	if r := h.call(mcptest.Add, `{"a":2,"b":"3"}`); r.IsError || r.Text != "5" {
		t.Errorf("add with a number as a string: %+v", r)
	}
	r := h.call(mcptest.Echo, `{"txt":"hi"}`)
	if !r.IsError || !strings.Contains(r.Text, `"text" is required`) {
		t.Errorf("missing field: %+v", r)
	}
	r = h.call(mcptest.Refs, `{"at":{"x":1}}`)
	if !r.IsError || !strings.Contains(r.Text, `"at.y" is required`) {
		t.Errorf("nested missing field: %+v", r)
	}
	if r := h.call(mcptest.Refs, `{"at":{"x":1,"y":2}}`); r.IsError || r.Text != `at {"x":1,"y":2}` {
		t.Errorf("refs: %+v", r)
	}
	if r := h.call(mcptest.NoSchema, `{"anything":[1,2]}`); r.IsError || r.Text != `{"anything":[1,2]}` {
		t.Errorf("an open schema refused a field: %+v", r)
	}
	if r := h.call(mcptest.TopAnyOf, `{"name":"x"}`); r.IsError || r.Text != `{"name":"x"}` {
		t.Errorf("merged anyOf: %+v", r)
	}
	if r := h.call(mcptest.Fail, `{}`); !r.IsError || !strings.Contains(r.Text, "the widget is broken") {
		t.Errorf("a tool's error: %+v", r)
	}
	if r := h.call(mcptest.Structure, `{}`); r.IsError || r.Text != `{"temp_c":21}` {
		t.Errorf("structured content: %+v", r)
	}
	if r := h.call(mcptest.Echo, `[1]`); !r.IsError || !strings.Contains(r.Text, "must be a JSON object") {
		t.Errorf("arguments not an object: %+v", r)
	}
}

func TestCrashIsAnErrorAndTheNextCallRestarts(t *testing.T) {
	srv := stdioServer(t)
	h := newHarness(t, srv, tools.Config{})
	first := srv.Pid()
	r := h.call(mcptest.Crash, `{}`)
	if !r.IsError || !strings.Contains(r.Text, "exited during the call") || !strings.Contains(r.Text, "exit status 3") ||
		!strings.Contains(r.Text, "crashing on purpose") || !strings.Contains(r.Text, "started again") {
		t.Fatalf("crash: %+v", r)
	}
	waitGone(t, first)
	r = h.call(mcptest.Pid, `{}`)
	if r.IsError || r.Text == "" || r.Text == strconv.Itoa(first) {
		t.Fatalf("after the crash: %+v", r)
	}
	if srv.Starts() != 2 {
		t.Errorf("starts %d, want 2", srv.Starts())
	}
}

func TestHangTimesOutKillsAndRestarts(t *testing.T) {
	srv := stdioServer(t, func(c *mcp.Config) { c.Timeout = 300 * time.Millisecond })
	h := newHarness(t, srv, tools.Config{})
	pid := srv.Pid()
	r := h.call(mcptest.Hang, `{}`)
	if !r.IsError || !strings.Contains(r.Text, "no answer before the timeout") || !strings.Contains(r.Text, "stopped") {
		t.Fatalf("hang: %+v", r)
	}
	waitGone(t, pid)
	// The server is started again outside the next call, so that call's
	// 300 ms timeout covers the call and not a process start on a busy
	// machine.
	if err := srv.Connect(t.Context()); err != nil {
		t.Fatalf("start again after the hang: %v", err)
	}
	if srv.Starts() != 2 {
		t.Errorf("starts %d, want 2", srv.Starts())
	}
	if r := h.call(mcptest.Echo, `{"text":"back"}`); r.IsError || r.Text != "echo: back" {
		t.Fatalf("after the hang: %+v", r)
	}
}

func TestCancelledCallEndsPromptly(t *testing.T) {
	h := newHarness(t, stdioServer(t), tools.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan tools.Result, 1)
	go func() {
		done <- h.ex.Run(ctx, []messages.ToolCall{{ID: "c", Name: "mcp__t__hang", Args: json.RawMessage(`{}`)}})[0]
	}()
	cancel()
	select {
	case r := <-done:
		if !r.IsError || !strings.Contains(r.Text, "cancelled") {
			t.Errorf("cancelled call: %+v", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a cancelled call did not return")
	}
}

func TestHugeOutputIsTruncatedAndSpilled(t *testing.T) {
	h := newHarness(t, stdioServer(t), tools.Config{})
	r := h.call(mcptest.Huge, `{"bytes":200000}`)
	if r.IsError || !r.Truncated || r.SpillPath == "" || len(r.Text) > 40*1024 {
		t.Fatalf("huge: truncated %v, spill %q, %d bytes", r.Truncated, r.SpillPath, len(r.Text))
	}
	full, err := os.ReadFile(r.SpillPath)
	if err != nil || len(full) != 200000 {
		t.Fatalf("spill file: %d bytes, %v", len(full), err)
	}
}

func TestOversizedMessageBreaksTheConnectionOnly(t *testing.T) {
	srv := stdioServer(t)
	h := newHarness(t, srv, tools.Config{})
	r := h.call(mcptest.Huge, `{"bytes":9000000}`)
	if !r.IsError || !strings.Contains(r.Text, "sent a message over the 8 MiB limit") {
		t.Fatalf("a message over the limit: %+v", r)
	}
	if r := h.call(mcptest.Echo, `{"text":"again"}`); r.IsError || r.Text != "echo: again" {
		t.Fatalf("after the oversized message: %+v", r)
	}
}

func TestMalformedProtocolIsAnError(t *testing.T) {
	srv := stdioServer(t, func(c *mcp.Config) { c.Timeout = 5 * time.Second })
	h := newHarness(t, srv, tools.Config{})
	r := h.call(mcptest.Garbage, `{}`)
	if !r.IsError || !strings.Contains(r.Text, "the connection to MCP server t broke") {
		t.Fatalf("garbage: %+v", r)
	}
	if r := h.call(mcptest.Echo, `{"text":"ok"}`); r.IsError || r.Text != "echo: ok" {
		t.Fatalf("after garbage: %+v", r)
	}
}

func TestHostileContentIsCleaned(t *testing.T) {
	h := newHarness(t, stdioServer(t), tools.Config{})
	r := h.call(mcptest.Hostile, `{}`)
	if r.IsError {
		t.Fatal(r.Text)
	}
	for _, bad := range []string{"\x1b", "\a", "\x00", "\xff", "\u202e", "\r", "PNG not really"} {
		if strings.Contains(r.Text, bad) {
			t.Errorf("result holds %q: %q", bad, r.Text)
		}
	}
	for _, want := range []string{"bell esc", "red", "nul", "\uFFFD", "[image: image/png, 15 bytes; not shown]",
		"[resource link: file:///etc/passwd (passwd)]", "[resource mem://blob: application/octet-stream, 4 bytes of binary data; not shown]",
		"[resource mem://note]\na note", "evil\nend"} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("result lacks %q: %q", want, r.Text)
		}
	}
}

func TestServerEnvironmentHoldsNoSecrets(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-ours")
	t.Setenv("TROUPE_NATS_TOKEN", "nats-ours")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("GOAUTH", "netrc")            // GO* is allowed, an AUTH is not
	t.Setenv("GOPRIVATE", "example.com/*") // nor is it taken for a secret
	srv := stdioServer(t, func(c *mcp.Config) { c.Env["SERVICE_TOKEN"] = "given-on-purpose" })
	h := newHarness(t, srv, tools.Config{})
	for name, want := range map[string]string{"OPENAI_API_KEY": "(unset)", "TROUPE_NATS_TOKEN": "(unset)",
		"SERVICE_TOKEN": "given-on-purpose", "LANG": "C.UTF-8", "GOAUTH": "(unset)", "GOPRIVATE": "example.com/*"} {
		if r := h.call(mcptest.ReadEnv, `{"name":"`+name+`"}`); r.Text != want {
			t.Errorf("%s: %q, want %q", name, r.Text, want)
		}
	}
}
