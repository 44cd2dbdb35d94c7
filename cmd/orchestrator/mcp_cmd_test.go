package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/troupe-ai/troupe/app/mcpserver"
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
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) mcpserver.RunStatus {
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
	var st mcpserver.RunStatus
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("%s: %v: %s", name, err, b)
	}
	return st
}

// `orchestrator mcp` on stdio serves the tools and runs a task to its
// answer (the server itself is tested in app/mcpserver).
func TestMCPCommandServesStdio(t *testing.T) {
	srv := llmtest.New(mcpScript())
	t.Cleanup(srv.Close)
	cs := startMCP(t, srv, metricsWorkspace(t))
	st := callTool(t, cs, "start_run", map[string]any{"task": "find alpha for me", "wait": true})
	if st.Status != "completed" || !strings.Contains(st.Answer, "a.txt:1") {
		t.Errorf("start_run: %+v", st)
	}
}

// mcp --http needs a token unless --no-auth on loopback, refuses
// --no-auth beyond loopback and the HTTP flags without --http; served with
// a token, a call without it is refused 401.
func TestMCPHTTPNeedsToken(t *testing.T) {
	srv := llmtest.New(mcpScript())
	t.Cleanup(srv.Close)
	ws := metricsWorkspace(t)
	tf := filepath.Join(t.TempDir(), "http.token")
	if err := os.WriteFile(tf, []byte("cmd-test-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--http", "127.0.0.1:0"}, "needs a token"},
		{[]string{"--http", "0.0.0.0:0", "--http-public", "--no-auth"}, "--no-auth on 0.0.0.0 refused"},
		{[]string{"--http", "0.0.0.0:0"}, "add --http-public"},
		{[]string{"--http-token-file", tf}, "go with --http ADDR"},
		{[]string{"--no-auth"}, "go with --http ADDR"},
	} {
		code, err := cmdMCP(t.Context(), append([]string{"--workspace", ws}, c.args...), testEnv(srv, t.TempDir()), strings.NewReader(""), io.Discard, io.Discard)
		if code != exitUsage || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: exit %d, %v; want a usage error saying %q", c.args, code, err, c.want)
		}
	}
	for _, args := range [][]string{{"--http-token-file", tf}, {"--no-auth"}} {
		ctx, cancel := context.WithCancel(t.Context())
		stderr := &lockedBuffer{}
		done := make(chan int, 1)
		go func() {
			code, _ := cmdMCP(ctx, append([]string{"--workspace", ws, "--http", "127.0.0.1:0"}, args...), testEnv(srv, t.TempDir()), strings.NewReader(""), io.Discard, stderr)
			done <- code
		}()
		at := regexp.MustCompile(`MCP over streamable HTTP at (http://\S+)`)
		pollUntil(t, "mcp --http says where it listens", func() bool { return at.MatchString(stderr.String()) })
		resp, err := http.Post(at.FindStringSubmatch(stderr.String())[1], "application/json",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := args[0] == "--no-auth"; (resp.StatusCode != http.StatusUnauthorized) == !want {
			t.Errorf("%v: a call without a token answered %d", args, resp.StatusCode)
		}
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
}
