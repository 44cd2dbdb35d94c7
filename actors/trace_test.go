package actors_test

import (
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/telemetry"
	"github.com/troupe-ai/troupe/telemetry/telemetrytest"
)

// A scripted run with tracing on reaches an OTLP receiver as one trace:
// the root's invoke_agent span, its chat spans and execute_tool spans,
// and the explore child's invoke_agent span under the root's delegate
// call, its own chat and grep spans under it, all with the GenAI
// attributes and none of the prompt or result text.
func TestRunTraces(t *testing.T) {
	rcv := telemetrytest.NewReceiver(t)
	p, err := telemetry.Start(t.Context(), telemetry.Config{Endpoint: rcv.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(script(
		kind("root", calls(delegate("explore", "Where is main?", false)), say("SECRET-ANSWER main is in main.go")),
		kind("explore", calls(tc("grep", `{"pattern":"func main"}`)), say("found it")),
	))
	defer srv.Close()
	o := options(t, srv, workspace(t, fixtureRepo), "SECRET-TASK find main", &actors.Recorder{})
	o.Tracer = p.Tracer()
	res := run(t, o)
	if res.Status != actors.StatusCompleted {
		t.Fatalf("run: %+v", res.AgentResult)
	}
	if err := p.ShutdownWithin(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	byName := map[string][]telemetrytest.Span{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		for k, v := range s.Attrs {
			if str, ok := v.(string); ok && (strings.Contains(str, "SECRET") || strings.Contains(str, "func main")) {
				t.Errorf("span %s attribute %s holds prompt, answer or argument text: %q", s.Name, k, str)
			}
		}
	}
	one := func(name string) telemetrytest.Span {
		t.Helper()
		if len(byName[name]) != 1 {
			t.Fatalf("%d %q spans; all: %v", len(byName[name]), name, names(spans))
		}
		return byName[name][0]
	}
	root, child := one("invoke_agent root"), one("invoke_agent explore")
	del, grep := one("execute_tool delegate"), one("execute_tool grep")
	chats := byName["chat big-model"]
	if len(chats) != 2 {
		t.Fatalf("%d root chat spans (want 2); all: %v", len(chats), names(spans))
	}
	cheap := byName["chat small-model"]
	if len(cheap) != 2 {
		t.Fatalf("%d explore chat spans (want 2); all: %v", len(cheap), names(spans))
	}
	if root.ParentID != "" {
		t.Errorf("root agent span has a parent %s", root.ParentID)
	}
	for _, s := range append(append(spans[:0:0], chats...), cheap...) {
		if s.TraceID != root.TraceID {
			t.Errorf("span %s in trace %s, the run's is %s", s.Name, s.TraceID, root.TraceID)
		}
	}
	parentOf := map[string]telemetrytest.Span{"root chat": root, "delegate": root, "explore agent": del, "grep": child, "explore chat": child}
	for what, s := range map[string]telemetrytest.Span{"root chat": chats[0], "delegate": del, "explore agent": child, "grep": grep, "explore chat": cheap[0]} {
		if s.ParentID != parentOf[what].SpanID || s.TraceID != root.TraceID {
			t.Errorf("%s span (parent %s, trace %s) is not under %s (%s)", what, s.ParentID, s.TraceID, parentOf[what].Name, parentOf[what].SpanID)
		}
	}
	want := map[string]map[string]any{
		"root": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "root", "gen_ai.agent.id": actors.RootAgentID,
			"troupe.run.id": o.Run, "troupe.agent.kind": "root", "troupe.agent.status": "completed"},
		"child": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "explore", "troupe.agent.parent": actors.RootAgentID,
			"troupe.run.id": o.Run},
		"chat": {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "big-model",
			"gen_ai.response.model": "big-model"},
		"grep": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "grep"},
	}
	got := map[string]telemetrytest.Span{"root": root, "child": child, "chat": chats[0], "grep": grep}
	for what, attrs := range want {
		for k, v := range attrs {
			if got[what].Attrs[k] != v {
				t.Errorf("%s span: %s = %#v, want %#v", what, k, got[what].Attrs[k], v)
			}
		}
	}
	for _, c := range append(chats, cheap...) {
		if c.Int("gen_ai.usage.input_tokens") <= 0 || c.Int("gen_ai.usage.output_tokens") <= 0 {
			t.Errorf("chat span without usage: %v", c.Attrs)
		}
		if fr, _ := c.Attrs["gen_ai.response.finish_reasons"].([]any); len(fr) != 1 {
			t.Errorf("chat span finish reasons %#v", c.Attrs["gen_ai.response.finish_reasons"])
		}
	}
	if grep.Str("gen_ai.tool.call.id") == "" || child.Str("gen_ai.agent.id") == "" {
		t.Errorf("grep call id %q, child id %q", grep.Str("gen_ai.tool.call.id"), child.Str("gen_ai.agent.id"))
	}
	if !(child.Start.After(del.Start) && !child.End.After(del.End) && !del.End.After(root.End)) {
		t.Errorf("timing: delegate %v–%v, child %v–%v, root ends %v", del.Start, del.End, child.Start, child.End, root.End)
	}
}

// A failing tool call is an execute_tool span with status Error.
func TestToolErrorSpan(t *testing.T) {
	rcv := telemetrytest.NewReceiver(t)
	p, err := telemetry.Start(t.Context(), telemetry.Config{Endpoint: rcv.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(script(kind("root", calls(tc("read_file", `{"path":"no/such/file.go"}`)), say("gone"))))
	defer srv.Close()
	o := options(t, srv, workspace(t, fixtureRepo), "read it", &actors.Recorder{})
	o.Tracer = p.Tracer()
	run(t, o)
	if err := p.ShutdownWithin(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	rf := rcv.Named("execute_tool read_file")
	if len(rf) != 1 || !rf[0].Error || rf[0].Str("error.type") != "tool_error" {
		t.Fatalf("read_file spans: %+v", rf)
	}
}

func names(spans []telemetrytest.Span) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}
