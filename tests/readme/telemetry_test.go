package readme

import (
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/telemetry/telemetrytest"
)

// The traces section's command works as written, with its collector
// replaced by an OTLP/HTTP receiver in the test: the demo and its node
// process export invoke_agent, chat and execute_tool spans, and the
// node's explore agents are in the orchestrator's trace, under its
// delegate calls.
func TestReadmeTraces(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's commands")
	}
	readme := readmeText(t)
	lines := commandLines(shBlocks(t, readme, "## Traces (OpenTelemetry)")[0])
	if len(lines) != 1 || !strings.Contains(lines[0], "http://127.0.0.1:4318") {
		t.Fatalf("want the one demo line with the collector at 127.0.0.1:4318, got %q", lines)
	}
	rcv := telemetrytest.NewReceiver(t)
	s := repoSession(t, strings.NewReplacer("http://127.0.0.1:4318", rcv.Endpoint()), "OPENAI_API_KEY=", "OPENAI_BASE_URL=",
		"TROUPE_NATS_URL=", "OTEL_SERVICE_NAME=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=", "OTEL_SDK_DISABLED=")
	tryOut(t, s, readme)
	out, errs := s.must(lines[0], 5*time.Minute)
	if !strings.HasPrefix(out, "Done.") {
		t.Fatalf("%s:\nstdout:\n%s\nstderr:\n%s", lines[0], out, errs)
	}
	// Both processes flushed on their way out.
	spans := rcv.Spans()
	byID := map[string]telemetrytest.Span{}
	services := map[string]bool{}
	for _, s := range spans {
		byID[s.SpanID] = s
		services[s.Service] = true
	}
	roots := rcv.Named("invoke_agent root")
	if len(roots) != 1 || roots[0].Service != "troupe-orchestrator" {
		t.Fatalf("root agent spans %+v; services %v; rejected %v", roots, services, rcv.Rejected())
	}
	for _, prefix := range []string{"chat ", "execute_tool "} {
		if len(rcv.Named(prefix)) == 0 {
			t.Errorf("no %q spans", prefix)
		}
	}
	remote := 0
	for _, s := range rcv.Named("invoke_agent explore") {
		if s.Service != "troupe-node" {
			continue
		}
		remote++
		if p := byID[s.ParentID]; s.TraceID != roots[0].TraceID || p.Name != "execute_tool delegate" || p.Service != "troupe-orchestrator" {
			t.Errorf("node's explore agent %s: trace %s (run's %s), parent %q from %q", s.Str("gen_ai.agent.id"), s.TraceID, roots[0].TraceID, p.Name, p.Service)
		}
	}
	if remote == 0 {
		t.Errorf("no explore agent span from the node; services %v", services)
	}
}
