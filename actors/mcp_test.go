package actors_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/mcp"
	"github.com/troupe-ai/troupe/tools/mcp/mcptest"
)

// testMCP is the test MCP server as a real process, serving kinds.
func testMCP(t *testing.T, ws string, kinds ...string) *mcp.Server {
	t.Helper()
	srv := mcp.New(mcp.Config{Name: "t", Command: []string{mcptest.Build(t)}, Dir: ws, Kinds: kinds}, zerolog.Nop())
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// sentTools decodes the tools a request carried: name → description.
func sentTools(t *testing.T, r llmtest.Recorded) map[string]string {
	t.Helper()
	var body struct {
		Tools []struct {
			Function struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tl := range body.Tools {
		out[tl.Function.Name] = tl.Function.Description
	}
	return out
}

// An agent whose MCP tools overflow the definition budget sees them by
// name in search_tools, loads one with it, calls another without loading
// it (the call runs and loads it), survives the server's crash, and the
// server is stopped when its owner closes it.
func TestAgentUsesDeferredMCPTools(t *testing.T) {
	ws := workspace(t, map[string]string{"a.txt": "a\n"})
	server := testMCP(t, ws, "root")
	srv := llmtest.New(script(kind("root",
		calls(tc("search_tools", `{"query":"echo"}`)),
		calls(tc("mcp__t__echo", `{"text":"hi"}`), tc("mcp__t__add", `{"a":1,"b":2}`)),
		calls(tc("mcp__t__crash", `{}`)),
		calls(tc("mcp__t__pid", `{}`)),
		say("done"),
	)))
	defer srv.Close()
	rec := &actors.Recorder{}
	o := options(t, srv, ws, "greet through the echo tool", rec)
	o.Settings.PlanFirst = map[string]bool{actors.KindRoot: false}
	o.ToolSources = []tools.ToolSource{server}
	o.Tools.Tiers = tools.Tiers{Budget: 200}
	res := run(t, o)
	if res.Status != actors.StatusCompleted || res.Text != "done" {
		t.Fatalf("result %+v", res.AgentResult)
	}
	reqs := srv.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests", len(reqs))
	}
	first := sentTools(t, reqs[0])
	if _, ok := first["mcp__t__echo"]; ok || !has(reqs[0].Tools, "read_file") || !has(reqs[0].Tools, "shell") {
		t.Errorf("round 1 tools: %s", toolNames(reqs[0]))
	}
	if d := first["search_tools"]; !strings.Contains(d, "\nmcp__t__echo\n") || !strings.Contains(d, "\nmcp__t__add\n") || strings.Contains(d, "giant_schema") {
		t.Errorf("search_tools description: %s", d)
	}
	if !has(reqs[1].Tools, "mcp__t__echo") || has(reqs[1].Tools, "mcp__t__add") {
		t.Errorf("round 2 tools: %s", toolNames(reqs[1]))
	}
	if !has(reqs[2].Tools, "mcp__t__add") {
		t.Errorf("a called deferred tool was not loaded: %s", toolNames(reqs[2]))
	}
	if got := toolResults(reqs[2]); len(got) != 2 || got[0] != "echo: hi" || got[1] != "3" {
		t.Errorf("results of round 2: %q", got)
	}
	if got := toolResults(reqs[3]); !strings.Contains(got[len(got)-1], "exited during the call (exit status 3") {
		t.Errorf("crash result: %q", got[len(got)-1])
	}
	got := toolResults(reqs[4])
	pid := 0
	if err := json.Unmarshal([]byte(got[len(got)-1]), &pid); err != nil || pid <= 0 {
		t.Fatalf("pid after the restart: %q", got[len(got)-1])
	}
	var deferred []int
	for _, ev := range rec.OfType(messages.EvtRoundStarted) {
		d := dataOf(t, ev)
		tok, _ := d["tool_tokens"].(float64)
		def, _ := d["tools_deferred"].(float64)
		if tok <= 0 {
			t.Errorf("round.started without tool_tokens: %v", d)
		}
		deferred = append(deferred, int(def))
	}
	if len(deferred) != 5 || deferred[0] == 0 || deferred[1] != deferred[0]-1 || deferred[2] != deferred[0]-2 {
		t.Errorf("tools deferred per round: %v", deferred)
	}
	if err := server.Close(); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 10*time.Second, func() error {
		if syscall.Kill(pid, 0) == nil {
			return errors.New("the MCP server outlived its run")
		}
		return nil
	})
}

// Kinds a server does not serve never see its tools, and a budget that
// fits every definition defers nothing.
func TestMCPToolsFollowKindsAndBudget(t *testing.T) {
	ws := workspace(t, map[string]string{"a.txt": "a\n"})
	server := testMCP(t, ws, "worker")
	srv := llmtest.New(script(kind("root", say("done"))))
	defer srv.Close()
	o := options(t, srv, ws, "nothing to do", &actors.Recorder{})
	o.Settings.PlanFirst = map[string]bool{actors.KindRoot: false}
	o.ToolSources = []tools.ToolSource{server}
	run(t, o)
	if got := srv.Requests()[0].Tools; slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, "mcp__") || n == "search_tools" }) {
		t.Errorf("root got a worker's MCP tools: %v", got)
	}
	if server.Starts() != 0 {
		t.Error("a server nobody needed was started")
	}

	server = testMCP(t, ws, "root")
	srv2 := llmtest.New(script(kind("root", say("done"))))
	defer srv2.Close()
	o = options(t, srv2, ws, "nothing to do", &actors.Recorder{})
	o.Settings.PlanFirst = map[string]bool{actors.KindRoot: false}
	o.ToolSources = []tools.ToolSource{server}
	o.Tools.Tiers = tools.Tiers{Budget: -1}
	run(t, o)
	if got := srv2.Requests()[0].Tools; !has(got, "mcp__t__echo") || has(got, "search_tools") {
		t.Errorf("with no budget limit: %v", got)
	}
}

// The tools an agent loaded survive a resume.
func TestLoadedToolsSurviveResume(t *testing.T) {
	ws := workspace(t, map[string]string{"a.txt": "a\n"})
	server := testMCP(t, ws, "root")
	srv := llmtest.New(script(kind("root", calls(tc("search_tools", `{"query":"echo"}`)), say("paused"))))
	defer srv.Close()
	o := options(t, srv, ws, "greet", &actors.Recorder{})
	o.Settings.PlanFirst = map[string]bool{actors.KindRoot: false}
	o.Settings.KeepCheckpoints = true
	o.ToolSources = []tools.ToolSource{server}
	o.Tools.Tiers = tools.Tiers{Budget: 200}
	first := run(t, o)
	cp, err := actors.FindCheckpoint(stateOf(t, ws), first.Run)
	if err != nil {
		t.Fatal(err)
	}
	srv2 := llmtest.New(script(kind("root", say("resumed"))))
	defer srv2.Close()
	o2 := options(t, srv2, ws, "", &actors.Recorder{})
	o2.Settings.PlanFirst = o.Settings.PlanFirst
	o2.ToolSources, o2.Tools.Tiers, o2.Resume = o.ToolSources, o.Tools.Tiers, cp
	if res := run(t, o2); res.Text != "resumed" {
		t.Fatalf("resumed run: %+v", res.AgentResult)
	}
	if got := srv2.Requests()[0].Tools; !has(got, "mcp__t__echo") || has(got, "mcp__t__add") {
		t.Errorf("tools after resume: %v", got)
	}
}

// A scripted agent finds a tool of the reference server-everything
// (Node.js, installed by tests/run.sh) with search_tools and calls it.
func TestAgentUsesServerEverything(t *testing.T) {
	cmd := mcptest.Everything(t)
	ws := workspace(t, map[string]string{"a.txt": "a\n"})
	server := mcp.New(mcp.Config{Name: "everything", Command: cmd, Dir: ws}, zerolog.Nop())
	t.Cleanup(func() { _ = server.Close() })
	srv := llmtest.New(script(kind("root",
		calls(tc("search_tools", `{"query":"echo"}`)),
		calls(tc("mcp__everything__echo", `{"message":"hello from troupe"}`)),
		say("done"),
	)))
	defer srv.Close()
	o := options(t, srv, ws, "echo a greeting", &actors.Recorder{})
	o.Settings.PlanFirst = map[string]bool{actors.KindRoot: false}
	o.ToolSources = []tools.ToolSource{server}
	o.Tools.Tiers = tools.Tiers{Budget: 200}
	if res := run(t, o); res.Text != "done" {
		t.Fatalf("result %+v", res.AgentResult)
	}
	reqs := srv.Requests()
	if has(reqs[0].Tools, "mcp__everything__echo") || !strings.Contains(sentTools(t, reqs[0])["search_tools"], "\nmcp__everything__get-sum\n") {
		t.Errorf("round 1 tools: %s", toolNames(reqs[0]))
	}
	if got := toolResults(reqs[1]); len(got) != 1 || !strings.Contains(got[0], "mcp__everything__echo") {
		t.Errorf("search_tools result: %q", got)
	}
	if !has(reqs[1].Tools, "mcp__everything__echo") {
		t.Errorf("round 2 tools: %s", toolNames(reqs[1]))
	}
	if got := toolResults(reqs[2]); len(got) != 1 || got[0] != "Echo: hello from troupe" {
		t.Errorf("echo result: %q", got)
	}
}
