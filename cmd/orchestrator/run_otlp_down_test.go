package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/testport"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// An OTEL_EXPORTER_OTLP_ENDPOINT where nothing listens costs exactly one
// warning line naming it, and the run itself goes on and succeeds.
func TestRunUnreachableCollectorWarnsOnce(t *testing.T) {
	endpoint := "http://127.0.0.1:" + strconv.Itoa(testport.Free(t))
	srv := scripted(t, llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "list_dir", Args: []byte(`{}`)}}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "list_dir", Args: []byte(`{}`)}}}, llmtest.Turn{Text: "done"})
	env := testEnv(srv, t.TempDir())
	get := env.getenv
	env.getenv = func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return endpoint
		}
		return get(k)
	}
	code, out, errs := runCmd(t, t.Context(), env, false, "--workspace", t.TempDir(), "--model", "m1", "--quiet", "look")
	if code != exitOK || out != "done\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errs)
	}
	var lines []string
	for _, l := range strings.Split(errs, "\n") {
		if strings.Contains(l, "telemetry") || strings.Contains(l, "span") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], endpoint) {
		t.Errorf("want one warning naming %s, got %d:\n%s", endpoint, len(lines), strings.Join(lines, "\n"))
	}
}
