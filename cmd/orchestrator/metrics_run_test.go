package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/actors/convo"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/watch"
)

// metricsScript is a run whose every metric is known: the root reads and
// greps in one parallel round (one grep in content mode), reads again
// (from the cache) and edits in a round that must run in order, runs two
// shells (one a file read), writes an unread file (a blind write), and
// delegates an explore and a worker agent whose tokens are scripted.
// The root's model reports no prompt tokens, so its chars-per-token ratio
// stays the default and its context estimates can be recomputed here.
func metricsScript() llmtest.Script {
	u := &llmtest.Usage{PromptTokens: 0, CompletionTokens: 5}
	turn := func(cs ...llmtest.ToolCall) llmtest.Turn { return llmtest.Turn{ToolCalls: cs, Usage: u} }
	tc := func(name, args string) llmtest.ToolCall {
		return llmtest.ToolCall{Name: name, Args: json.RawMessage(args)}
	}
	return llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			turn(tc("read_file", `{"path":"a.txt"}`), tc("read_file", `{"path":"b.txt"}`),
				tc("grep", `{"pattern":"alpha"}`), tc("grep", `{"pattern":"beta","mode":"content"}`)),
			turn(tc("read_file", `{"path":"a.txt"}`), tc("edit_file", `{"path":"a.txt","old_string":"alpha","new_string":"ALPHA"}`)),
			turn(tc("shell", `{"command":"cat b.txt"}`), tc("shell", `{"command":"echo hi"}`)),
			turn(tc("write_file", `{"path":"d.txt","content":"blind\n"}`)),
			turn(tc("delegate", `{"type":"explore","task":"look around"}`), tc("delegate", `{"type":"worker","task":"do the work"}`)),
			{Text: "done", Usage: u},
		}},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{{Text: "found it", Usage: &llmtest.Usage{PromptTokens: 100, CompletionTokens: 20}}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{{Text: "worked", Usage: &llmtest.Usage{PromptTokens: 200, CompletionTokens: 30}}}},
	}}
}

func metricsWorkspace(t *testing.T) string {
	ws := t.TempDir()
	for name, body := range map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n", "d.txt": "delta\n",
		".troupe/config.yaml": "agent:\n  plan_first: {root: false, worker: false}\n"} {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// `run --json` reports every metric of the scripted run, each at the value
// the script makes it; the text summary shows them.
func TestRunReportsMetrics(t *testing.T) {
	srv := llmtest.New(metricsScript())
	t.Cleanup(srv.Close)
	code, out, errs := runCmd(t, t.Context(), testEnv(srv, t.TempDir()), false, "--workspace", metricsWorkspace(t), "--yes", "--json", "measure me")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	var res struct {
		Text    string        `json:"text"`
		Metrics watch.Metrics `json:"metrics"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Text != "done" {
		t.Fatalf("%v: %s", err, out)
	}
	m := res.Metrics
	for _, c := range []struct {
		name      string
		got       watch.Share
		count, of int64
	}{
		{"shell_file_ops", m.ShellFileOps, 1, 2},           // cat b.txt; echo hi
		{"grep_files_mode", m.GrepFilesMode, 1, 2},         // the default; content
		{"blind_writes", m.BlindWrites, 1, 2},              // edit of a read file; write of unread d.txt
		{"cache_hits", m.CacheHits, 1, 5},                  // 4 reads/greps, then a.txt again
		{"parallel_rounds", m.ParallelRounds, 2, 4},        // reads, delegates; not read+edit of a.txt, not shells
		{"explore_vs_worker", m.ExploreVsWorker, 120, 350}, // 100+20 against 200+30
	} {
		if c.got.Count != c.count || c.got.Of != c.of || c.got.Share == nil || *c.got.Share != float64(c.count)/float64(c.of) {
			t.Errorf("%s = %+v, want %d of %d", c.name, c.got, c.count, c.of)
		}
	}
	if m.TokensByKind["root"] != 30 || m.TokensByKind["explore"] != 120 || m.TokensByKind["worker"] != 230 {
		t.Errorf("tokens_by_kind %v", m.TokensByKind)
	}
	// The tool-result share of each root request, recomputed from what the
	// model was sent: tool messages over all messages plus the tool
	// definitions, in tokens at the default ratio.
	var shares []float64
	for _, r := range srv.Requests() {
		if r.Kind == "root" {
			shares = append(shares, requestToolShare(t, r))
		}
	}
	var sum, mx float64
	for _, s := range shares {
		sum += s
		mx = max(mx, s)
	}
	if len(shares) != 6 || shares[0] != 0 || shares[1] <= 0 {
		t.Fatalf("shares %v", shares)
	}
	// Explore and worker answer at once: one share of 0 each. The run's
	// estimate rounds its token counts at a ratio recalibrated from the
	// reported usage, the recomputation at the default ratio: a round's
	// count may differ by a token, so the mean is compared to 0.1%.
	want := watch.PerRound{Rounds: 8, Mean: sum / 8, Max: mx}
	if got := m.ToolResultShare; got.Rounds != want.Rounds || math.Abs(got.Mean-want.Mean) > want.Mean*1e-3 || math.Abs(got.Max-want.Max) > want.Max*1e-3 {
		t.Errorf("tool_result_share %+v, want %+v (root shares %v)", got, want, shares)
	}

	// The text summary lists them.
	srv2 := llmtest.New(metricsScript())
	t.Cleanup(srv2.Close)
	code, _, errs = runCmd(t, t.Context(), testEnv(srv2, t.TempDir()), false, "--workspace", metricsWorkspace(t), "--yes", "--quiet", "measure me")
	for _, w := range []string{"metrics:\n", "shell calls on file operations  50% (1 of 2 shell calls)", "grep calls in files mode        50% (1 of 2 grep calls)",
		"blind writes                    50% (1 of 2 file writes)", "cache hits                      20% (1 of 5 cacheable calls)",
		"multi-tool rounds in parallel   50% (2 of 4 rounds with 2+ calls)", "explore vs worker tokens        120 tok vs 230 tok (explore 34%)",
		"tokens by kind                  explore 120 tok · root 30 tok · worker 230 tok", "tool results in the context     mean "} {
		if !strings.Contains(errs, w) {
			t.Errorf("summary lacks %q:\n%s", w, errs)
		}
	}
	if code != exitOK {
		t.Errorf("exit %d", code)
	}
}

// requestToolShare is the estimated tool-result share of a request, as
// the agent estimates it: characters of tool messages over characters of
// all messages plus the tools' definitions, each in tokens rounded up at
// the default ratio. (With planning off, the tools sent are all of the
// root kind's, which is what the estimate counts.)
func requestToolShare(t *testing.T, r llmtest.Recorded) float64 {
	t.Helper()
	// The definitions as sent (search_tools' description lists the
	// deferred tools, so it is the request's, not a registry's).
	var body struct {
		Tools []struct {
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	fixed := 0
	for _, tl := range body.Tools {
		var compact bytes.Buffer
		if err := json.Compact(&compact, tl.Function.Parameters); err != nil {
			t.Fatal(err)
		}
		fixed += len(tl.Function.Name) + len(tl.Function.Description) + compact.Len()
	}
	all, toolChars := fixed, 0
	called := map[string]string{} // call ID → tool: the conversation names each result's tool
	for _, m := range r.Messages {
		msg := llm.Message{Role: llm.Role(m.Role), Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, messages.ToolCall{ID: c.ID, Name: c.Name, Args: c.Args})
			called[c.ID] = c.Name
		}
		if msg.Role == llm.RoleTool && msg.Name == "" {
			msg.Name = called[msg.ToolCallID]
		}
		n := convo.MessageChars(msg)
		all += n
		if msg.Role == llm.RoleTool {
			toolChars += n
		}
	}
	tokens := func(c int) float64 { return math.Ceil(float64(c) / convo.DefaultCharsPerToken) }
	return tokens(toolChars) / tokens(all)
}
