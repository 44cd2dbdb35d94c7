package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/app/setup"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// workspace is a small workspace whose config (extra appended) turns off
// planning, so scripted roots act in their first round.
func workspace(t *testing.T, extra string) string {
	t.Helper()
	ws := t.TempDir()
	for name, body := range map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n",
		".troupe/config.yaml": "agent:\n  plan_first: {root: false, worker: false}\n" + extra} {
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

// newServer is a Server of ws against the scripted model, on an embedded
// NATS server of its own; it is closed when the test ends.
func newServer(t *testing.T, srv *llmtest.Server, ws string) *Server {
	t.Helper()
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "sk-test-secret-123"}
	cfg, err := runner.LoadConfig(config.Sources{Home: t.TempDir(), Workspace: ws, Getenv: func(k string) string { return vars[k] }},
		runner.Overrides{Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	nb, err := runner.StartBus(ctx, cfg.NATS, setup.StreamLimits(cfg), "nats.url", ws, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	s := New(ctx, Options{Config: cfg, Workspace: ws, Bus: nb, Version: "test", Log: zerolog.Nop()})
	t.Cleanup(func() {
		cancel()
		s.Close()
		nb.Close(context.Background())
	})
	return s
}

// stdio serves s on pipes and returns the client's ends: what it writes
// to the server, and what it reads from it.
func stdio(t *testing.T, s *Server) (io.WriteCloser, io.ReadCloser) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- s.ServeStdio(t.Context(), inR, outW)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	})
	return inW, outR
}

// connect connects the Go SDK's client to s over stdio.
func connect(t *testing.T, s *Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	in, out := stdio(t, s)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := client.Connect(t.Context(), &mcp.IOTransport{Reader: out, Writer: in}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and decodes its structured answer; an error result
// fails the test.
func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args any) RunStatus {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
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

// errorText calls a tool that must answer with an error result, and
// returns its text.
func errorText(t *testing.T, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v, want an error result", name, err)
	}
	if !res.IsError {
		t.Fatalf("%s: %+v, want an error result", name, res)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// poll polls cond every 20 ms for up to a minute.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not met in a minute: %s", what)
		}
		<-time.After(20 * time.Millisecond)
	}
}

// runsOf are the distinct runs the scripted model was asked for.
func runsOf(srv *llmtest.Server) map[string]int {
	out := map[string]int{}
	for _, r := range srv.Requests() {
		out[r.Run]++
	}
	return out
}

// progressLog collects a client's progress notifications.
type progressLog struct {
	mu   sync.Mutex
	msgs []string
	vals []float64
	seen chan string // each message, when someone listens
}

func newProgressLog() *progressLog { return &progressLog{seen: make(chan string, 1000)} }

func (p *progressLog) handler(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	p.msgs = append(p.msgs, req.Params.Message)
	p.vals = append(p.vals, req.Params.Progress)
	p.mu.Unlock()
	p.seen <- req.Params.Message
}

func (p *progressLog) all() ([]string, []float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.msgs...), append([]float64(nil), p.vals...)
}
