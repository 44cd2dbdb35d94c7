package main

import (
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/telemetry/telemetrytest"
)

// run exports its spans when OTEL_EXPORTER_OTLP_ENDPOINT names a
// collector, under OTEL_SERVICE_NAME, and has flushed them when it
// returns; without the variable it sends nothing.
func TestRunExportsTraces(t *testing.T) {
	rcv := telemetrytest.NewReceiver(t)
	srv := scripted(t, llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "list_dir", Args: []byte(`{}`)}}}, llmtest.Turn{Text: "done"})
	env := testEnv(srv, t.TempDir())
	vars := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.Endpoint(), "OTEL_SERVICE_NAME": "troupe-ci"}
	get := env.getenv
	env.getenv = func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return get(k)
	}
	t.Setenv("OTEL_SERVICE_NAME", "troupe-ci") // the SDK reads the resource from the process environment
	code, out, errs := runCmd(t, t.Context(), env, false, "--workspace", t.TempDir(), "--model", "m1", "--quiet", "look")
	if code != exitOK || out != "done\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errs)
	}
	// Flushed before run returned: no waiting here.
	names := map[string]int{}
	for _, s := range rcv.Spans() {
		names[s.Name]++
		if s.Service != "troupe-ci" {
			t.Errorf("span %s from service %q", s.Name, s.Service)
		}
	}
	if names["invoke_agent root"] != 1 || names["chat m1"] != 2 || names["execute_tool list_dir"] != 1 {
		t.Fatalf("spans %v; rejected %v", names, rcv.Rejected())
	}

	srv2 := scripted(t, llmtest.Turn{Text: "done"})
	if code, _, errs := runCmd(t, t.Context(), testEnv(srv2, t.TempDir()), false, "--workspace", t.TempDir(), "--model", "m1", "--quiet", "x"); code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if n := rcv.Posts(); n != 1 {
		t.Errorf("%d export requests; the run without an endpoint sent some", n)
	}
}

// orchestrator mcp traces the runs it starts, and has flushed their spans
// when it exits.
func TestMCPExportsTraces(t *testing.T) {
	rcv := telemetrytest.NewReceiver(t)
	srv := llmtest.New(mcpScript())
	t.Cleanup(srv.Close)
	env := testEnv(srv, t.TempDir())
	get := env.getenv
	env.getenv = func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return rcv.Endpoint()
		}
		return get(k)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	stderr := &lockedBuffer{}
	go func() {
		code, err := cmdMCP(t.Context(), []string{"--workspace", metricsWorkspace(t)}, env, inR, outW, stderr)
		if err != nil {
			stderr.Write([]byte(err.Error()))
		}
		outW.Close()
		done <- code
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v (%s)", err, stderr)
	}
	st := callTool(t, cs, "start_run", map[string]any{"task": "find alpha for me", "wait": true})
	cs.Close()
	inW.Close()
	if code := <-done; code != exitOK || st.Status != "completed" {
		t.Fatalf("mcp exit %d, run %+v: %s", code, st, stderr)
	}
	roots := rcv.Named("invoke_agent root")
	if len(roots) != 1 || roots[0].Str("troupe.run.id") != st.Run || roots[0].Service != "troupe-orchestrator" {
		t.Fatalf("root spans %+v (run %s)", roots, st.Run)
	}
	for _, s := range rcv.Spans() {
		if s.TraceID != roots[0].TraceID {
			t.Errorf("span %s outside the run's trace", s.Name)
		}
	}
	if len(rcv.Named("invoke_agent explore")) == 0 || len(rcv.Named("chat ")) == 0 {
		t.Errorf("spans: %v", rcv.Spans())
	}
}
