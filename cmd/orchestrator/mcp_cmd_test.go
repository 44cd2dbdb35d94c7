package main

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// mcpScript: the root of each run (start_run's task "find alpha for me",
// explore's fan-out task) delegates one explore agent, which finds a.txt:1
// after a short wait, and answers with what it found.
func mcpScript() llmtest.Script {
	root := []llmtest.Turn{
		{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"where is alpha?"}`)}}},
		{Text: "alpha is in a.txt:1"},
	}
	found := llmtest.Turn{Text: "alpha is at a.txt:1", Latency: llmtest.Duration(300 * time.Millisecond)}
	return llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root", TaskContains: "find alpha for me"}, Turns: root},
		{Match: llmtest.Matcher{Kind: "root", TaskContains: "explore agent"}, Turns: root},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{found, found}},
	}}
}

// startMCP runs `orchestrator mcp` on pipes and connects the SDK's client.
func startMCP(t *testing.T, srv *llmtest.Server, ws string) *mcp.ClientSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	stderr := &lockedBuffer{}
	go func() {
		code, err := cmdMCP(ctx, []string{"--workspace", ws}, testEnv(srv, t.TempDir()), inR, outW, stderr)
		if err != nil {
			stderr.Write([]byte(err.Error()))
		}
		outW.Close()
		done <- code
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		cancel()
		t.Fatalf("connect: %v (%s)", err, stderr)
	}
	t.Cleanup(func() {
		cs.Close()
		inW.Close()
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("mcp exit %d: %s", code, stderr)
		}
	})
	return cs
}

// callTool calls a tool and decodes its structured answer.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) RunStatus {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		b, _ := json.Marshal(res.Content)
		t.Fatalf("%s: error result %s", name, b)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var st RunStatus
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("%s: %v: %s", name, err, b)
	}
	return st
}

// The SDK's client lists troupe's tools, and two calls made at once (a
// run waited for and an explore fan-out) both finish with their answers
// against the scripted model; check_run reports a finished run, and an
// unknown run is an error result.
func TestMCPServerRunsConcurrentCalls(t *testing.T) {
	srv := llmtest.New(mcpScript())
	t.Cleanup(srv.Close)
	cs := startMCP(t, srv, metricsWorkspace(t))
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{"cancel_run", "check_run", "explore", "start_run"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	var wg sync.WaitGroup
	var run, explore RunStatus
	wg.Go(func() {
		run = callTool(t, cs, "start_run", map[string]any{"task": "find alpha for me", "wait": true, "budget_tokens": 500000})
	})
	wg.Go(func() {
		explore = callTool(t, cs, "explore", map[string]any{"question": "where is alpha?", "agents": 2})
	})
	wg.Wait()
	for _, st := range []RunStatus{run, explore} {
		if st.Status != "completed" || !strings.Contains(st.Answer, "a.txt:1") || st.Run == "" {
			t.Errorf("run %+v, want completed with the answer", st)
		}
	}
	if run.Run == explore.Run {
		t.Errorf("both calls ran as run %s", run.Run)
	}
	if !slices.Contains(explore.Findings, "a.txt:1") {
		t.Errorf("explore findings %v, want a.txt:1", explore.Findings)
	}
	if st := callTool(t, cs, "check_run", map[string]any{"run": run.Run}); st.Status != "completed" || st.Answer != run.Answer {
		t.Errorf("check_run: %+v", st)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "check_run", Arguments: map[string]any{"run": "nope"}})
	if err != nil || !res.IsError {
		t.Errorf("check_run of an unknown run: %v, %+v", err, res)
	}
}
