package actors_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// newClient is the real model client pointed at a scripted server.
func newClient(t testing.TB, srv *llmtest.Server) llm.Client {
	t.Helper()
	c, err := llm.NewClient(llm.Config{BaseURL: srv.URL(), Model: "big-model", Stream: true, MaxAttempts: 4,
		InitialBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func tc(name, args string) llmtest.ToolCall {
	return llmtest.ToolCall{Name: name, Args: json.RawMessage(args)}
}

func calls(cs ...llmtest.ToolCall) llmtest.Turn { return llmtest.Turn{ToolCalls: cs} }
func say(s string) llmtest.Turn                 { return llmtest.Turn{Text: s} }

func script(agents ...llmtest.AgentScript) llmtest.Script { return llmtest.Script{Agents: agents} }

func kind(k string, turns ...llmtest.Turn) llmtest.AgentScript {
	return llmtest.AgentScript{Match: llmtest.Matcher{Kind: k}, Turns: turns}
}

// workspace makes a temporary workspace holding files.
func workspace(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// options are a run's options with the usual test wiring.
func options(t testing.TB, srv *llmtest.Server, ws, task string, rec *actors.Recorder) actors.Options {
	return actors.Options{Run: "run-" + strings.ReplaceAll(t.Name(), "/", "-"), Workspace: ws, Task: task,
		Client: newClient(t, srv), Models: actors.Models{Default: "big-model", Cheap: "small-model"},
		Events: rec, Log: zerolog.Nop()}
}

func run(t *testing.T, o actors.Options) actors.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := actors.Run(ctx, o)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

// checkFor polls fn until it returns nil or total passes.
var checkFor = testfiles.Poll

// checkSeqs asserts every agent's events are numbered 1..n without gaps.
func checkSeqs(t *testing.T, evs []messages.Event) {
	t.Helper()
	next := map[string]uint64{}
	for _, ev := range evs {
		if err := ev.Validate(); err != nil {
			t.Errorf("invalid event %+v: %v", ev, err)
		}
		if ev.Seq != next[ev.Agent]+1 {
			t.Errorf("agent %s: event %s has seq %d, want %d", ev.Agent, ev.Type, ev.Seq, next[ev.Agent]+1)
		}
		next[ev.Agent] = ev.Seq
	}
}

func toolNames(r llmtest.Recorded) string { return strings.Join(r.Tools, ",") }

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func requestsOf(srv *llmtest.Server, kind string) []llmtest.Recorded {
	var out []llmtest.Recorded
	for _, r := range srv.Requests() {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

func dataOf(t *testing.T, ev messages.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(ev.Data, &m); err != nil {
		t.Fatalf("event %s data: %v", ev.Type, err)
	}
	return m
}

// stateOf is the state directory of the runs in ws (the tests' temporary
// XDG_STATE_HOME, see TestMain).
func stateOf(t testing.TB, ws string) string {
	t.Helper()
	dir, err := actors.StateDir(ws)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
