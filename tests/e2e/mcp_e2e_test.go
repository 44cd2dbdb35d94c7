package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// MCPSDKVersion is the official MCP TypeScript SDK tests/run.sh installs
// into tests/.npm, the client these tests meet troupe's MCP server with.
const MCPSDKVersion = "1.32.2"

// mcpSDKEnv is the environment that lets node load the SDK from
// tests/.npm; without it the test fails on CI and skips elsewhere.
func mcpSDKEnv(t *testing.T) []string {
	t.Helper()
	peer.Need(t, "node")
	mods, _ := filepath.Abs("../.npm/node_modules")
	b, err := os.ReadFile(filepath.Join(mods, "@modelcontextprotocol", "sdk", "package.json"))
	if err != nil || !strings.Contains(string(b), `"version": "`+MCPSDKVersion+`"`) {
		peer.Missing(t, "@modelcontextprotocol/sdk", "the MCP TypeScript SDK %s is not in tests/.npm (tests/run.sh installs it)", MCPSDKVersion)
	}
	return []string{"NODE_PATH=" + mods, "HOME=" + t.TempDir()}
}

// mcpLine is one observation the client script printed.
type mcpLine struct {
	Event    string          `json:"event"`
	Progress float64         `json:"progress"`
	Message  string          `json:"message"`
	Run      string          `json:"run"`
	Result   json.RawMessage `json:"result"`
	Status   json.RawMessage `json:"status"`
	IsError  bool            `json:"is_error"`
	MaxGapMS int64           `json:"max_gap_ms"`
	Codes    map[string]int  `json:"codes"`
	Count    int             `json:"count"`
	Error    string          `json:"error"`
}

// mcpStatus is the part of a tool's structured answer the tests read.
type mcpStatus struct {
	Run          string   `json:"run"`
	Status       string   `json:"status"`
	Answer       string   `json:"answer"`
	BudgetTokens int64    `json:"budget_tokens"`
	Note         string   `json:"note"`
	Findings     []string `json:"findings"`
}

// mcpClient runs the TypeScript SDK's client on scenario against
// `orchestrator mcp` with args; on calls fn with each line as it comes,
// and the client's exit code is returned with every line.
func mcpClient(t *testing.T, env []string, scenario string, on func(mcpLine), args ...string) (int, []mcpLine) {
	t.Helper()
	cmd := exec.Command("node", append([]string{"testdata/mcp_client.cjs", scenario, bin.orchestrator, "mcp"}, args...)...)
	cmd.Env = append(append(os.Environ(), env...), homeFor(args)...)
	p := startCmd(t, cmd)
	var lines []mcpLine
	deadline := time.After(4 * time.Minute)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				code := p.wait(time.Minute)
				if code != 0 || t.Failed() {
					t.Logf("client and server stderr:\n%s", p.errs())
				}
				return code, lines
			}
			var ml mcpLine
			if err := json.Unmarshal([]byte(l), &ml); err != nil {
				t.Fatalf("the client printed %q: %v", l, err)
			}
			if ml.Event == "fatal" {
				t.Errorf("the client failed: %s\n%s", ml.Error, p.errs())
			}
			if on != nil {
				on(ml)
			}
			lines = append(lines, ml)
		case <-deadline:
			t.Fatalf("the client did not finish in 4 minutes:\n%s\n%s", p.out(), p.errs())
		}
	}
}

func lineOf(lines []mcpLine, event string) mcpLine {
	for _, l := range lines {
		if l.Event == event {
			return l
		}
	}
	return mcpLine{}
}

func statusOf(t *testing.T, raw json.RawMessage) mcpStatus {
	t.Helper()
	var st mcpStatus
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("status %s: %v", raw, err)
	}
	return st
}

// mcpRepo is a workspace with a config of its own: planning off, and
// the agent and budget settings given.
func mcpRepo(t *testing.T, agent, budget string) string {
	ws := repo(t, "")
	cfg := "agent:\n  plan_first: {root: false}\n" + agent + "budget:\n  per_kind: {explore: 64}\n" + budget
	userConfig(t, ws, cfg) // the user's own: a workspace's config may only tighten
	return ws
}

// fanOut is a root that delegates two explore agents in one turn and,
// once their results are in, answers.
var fanOut = fanOutAnswering(0)

// fanOutAnswering is fanOut answering after latency.
func fanOutAnswering(latency time.Duration) llmtest.Turn {
	return llmtest.Turn{Dynamic: func(r llmtest.Recorded) llmtest.Turn {
		for _, m := range r.Messages {
			if m.Role == "tool" {
				return llmtest.Turn{Text: "alpha is in main.go:1", Latency: llmtest.Duration(latency)}
			}
		}
		del := func(task string) llmtest.ToolCall {
			return llmtest.ToolCall{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"` + task + `"}`)}
		}
		return llmtest.Turn{ToolCalls: []llmtest.ToolCall{del("look at main"), del("look at the rest")}}
	}}
}

// The SDK client waits for a 20 s exploration with a 7 s timeout that only
// progress notifications keep restarting: it gets the answer, progress
// naming the run, its agents and the latest finding, never 7 s apart.
func TestMCPClientGetsProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	env := mcpSDKEnv(t)
	step := llmtest.Duration(5500 * time.Millisecond)
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{fanOutAnswering(3 * time.Second)}, Repeat: true},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "list_dir", Args: json.RawMessage(`{"path":"."}`)}}, Latency: step},
			{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"main.go"}`)}}, Latency: step},
			{Text: "alpha is at main.go:1", Latency: step}}},
	}})
	defer srv.Close()
	start := time.Now()
	code, lines := mcpClient(t, append(env, modelEnv(srv)...), "progress", nil, "--workspace", repo(t, ""))
	took := time.Since(start)
	res := lineOf(lines, "result")
	if code != 0 || res.Result == nil {
		t.Fatalf("client exit %d, lines %+v", code, lines)
	}
	st := statusOf(t, res.Result)
	if st.Status != "completed" || !strings.Contains(st.Answer, "main.go:1") {
		t.Errorf("explore: %+v", st)
	}
	var msgs []string
	for _, l := range lines {
		if l.Event == "progress" {
			msgs = append(msgs, l.Message)
		}
	}
	if len(msgs) < 5 || !strings.HasPrefix(msgs[0], "run "+st.Run) || !strings.Contains(strings.Join(msgs, "\n"), "latest finding main.go:1") ||
		!strings.Contains(strings.Join(msgs, "\n"), "agents 3 running") {
		t.Errorf("progress:\n%s", strings.Join(msgs, "\n"))
	}
	t.Logf("exploration of %s: %d progress notifications, at most %d ms apart (figure)", took.Round(time.Second), len(msgs), res.MaxGapMS)
}

// The SDK client's abort of a call waiting for its exploration cancels
// the run within 3 s, counted in model requests rather than on a clock:
// each explore agent's request takes 3 s and the agents would go on for
// 30 rounds, so an agent may start at most one request after the abort
// (its request in flight ended as the abort went out) and only a run
// stopped in under 3 s keeps to that; none is left in flight and the run
// ends cancelled.
func TestMCPClientAbortStopsTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	env := mcpSDKEnv(t)
	const explorers = 2 // fanOut's delegations
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{fanOut}, Repeat: true},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "list_dir", Args: json.RawMessage(`{"path":"."}`)}}, Latency: llmtest.Duration(3 * time.Second)}}},
	}})
	defer srv.Close()
	var aborted time.Time
	before := -1
	code, lines := mcpClient(t, append(env, modelEnv(srv)...), "abort", func(l mcpLine) {
		if l.Event == "aborting" {
			// Requests are numbered from 1 as they arrive: those so far
			// are the ones answered and the ones in flight.
			aborted, before = time.Now(), len(srv.Requests())+srv.InFlight()
		}
	}, "--workspace", mcpRepo(t, "  max_rounds: 30\n", ""))
	if code != 0 || before < 0 || lineOf(lines, "aborted").Event == "" {
		t.Fatalf("client exit %d, lines %+v", code, lines)
	}
	st := statusOf(t, lineOf(lines, "status").Result)
	if st.Status != "cancelled" {
		t.Errorf("after the abort the run is %+v, want cancelled", st)
	}
	after := map[string]int{}
	var last time.Time
	reqs := srv.Requests()
	for _, r := range reqs {
		if r.Seq > before {
			after[r.Agent]++
			if r.Kind != "explore" {
				t.Errorf("request %d of a %s agent after the abort", r.Seq, r.Kind)
			}
		}
		if r.Ended.After(last) {
			last = r.Ended
		}
	}
	for agent, n := range after {
		if n > 1 {
			t.Errorf("explore agent %s started %d model requests after the abort, want at most 1", agent, n)
		}
	}
	if len(after) > explorers || srv.InFlight() != 0 {
		t.Errorf("requests after the abort from %d agents (want at most %d), %d still in flight", len(after), explorers, srv.InFlight())
	}
	t.Logf("%d model requests before the abort, %d in all; the last ended %s after it (figure)", before, len(reqs), last.Sub(aborted).Round(time.Millisecond))
}

// Lines that are not JSON-RPC on the server's stdin, arguments no run can
// use and an unknown method get their errors (the arguments -32602 and
// the method -32601, with no model call), and neither the server nor the
// run it holds dies: the run completes.
func TestMCPClientGarbageDoesNotKillTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	env := mcpSDKEnv(t)
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{fanOut}, Repeat: true},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{{Text: "main.go:1", Latency: llmtest.Duration(time.Second)}}},
	}})
	defer srv.Close()
	code, lines := mcpClient(t, append(env, modelEnv(srv)...), "garbage", nil, "--workspace", repo(t, ""))
	g := lineOf(lines, "garbage")
	if code != 0 || g.Event == "" {
		t.Fatalf("client exit %d, lines %+v", code, lines)
	}
	want := map[string]int{`explore {"question":""}`: -32602, `explore {"question":"where?","agents":-3}`: -32602,
		`start_run {"task":"x","budget_tokens":"lots"}`: -32602, "no/such/method": -32601}
	for k, c := range want {
		if g.Codes[k] != c {
			t.Errorf("%s: code %d, want %d", k, g.Codes[k], c)
		}
	}
	if st := statusOf(t, g.Status); st.Status != "completed" || st.Run != g.Run {
		t.Errorf("the run held through the garbage: %+v", st)
	}
	runs := map[string]bool{}
	for _, r := range srv.Requests() {
		runs[r.Run] = true
	}
	if len(runs) != 1 || !runs[g.Run] {
		t.Errorf("model requests of runs %v, want only %s's", runs, g.Run)
	}
}

// Against `serve` with a credential per role, `orchestrator mcp --nats
// URL --creds requester.creds` runs a task the SDK client asked for; its
// budget_tokens above the configured budget is held to it.
func TestMCPClientCredsAndBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	env := mcpSDKEnv(t)
	store := t.TempDir()
	serve := start(t, bin.orchestrator, nil, "serve", "--listen", "127.0.0.1:0", "--store", store)
	url := serve.firstLine(30 * time.Second)
	creds := bus.CredsPath(filepath.Join(store, "creds"), bus.RoleRequester)
	serve.waitStderr("--creds "+creds, 10*time.Second)
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{fanOut}, Repeat: true},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{{Text: "main.go:1"}}},
	}})
	defer srv.Close()
	code, lines := mcpClient(t, append(append(env, modelEnv(srv)...), `MCP_ARGS={"task":"find alpha","budget_tokens":1000000000000}`), "call", nil,
		"--workspace", mcpRepo(t, "", "  tokens: 40000\n"), "--nats", url, "--creds", creds)
	res := lineOf(lines, "result")
	if code != 0 || res.Result == nil {
		t.Fatalf("client exit %d, lines %+v", code, lines)
	}
	st := statusOf(t, res.Result)
	if st.Status != "completed" || st.BudgetTokens != 40000 || !strings.Contains(st.Note, "the run got 40000") {
		t.Errorf("start_run against serve: %+v", st)
	}
}
