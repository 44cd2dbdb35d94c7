package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

func scripted(t *testing.T, turns ...llmtest.Turn) *llmtest.Server {
	t.Helper()
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "root"}, Turns: turns}}})
	t.Cleanup(srv.Close)
	return srv
}

func testEnv(srv *llmtest.Server, home string) runEnv {
	vars := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "sk-test-secret-123"}
	return runEnv{getenv: func(k string) string { return vars[k] }, home: home, stdin: strings.NewReader("")}
}

func runCmd(t *testing.T, ctx context.Context, env runEnv, resume bool, args ...string) (int, string, string) {
	t.Helper()
	// stderr is written by the command and by its logger's goroutines
	// (an exporter's warning), as os.Stderr is.
	var out bytes.Buffer
	var errb lockedBuffer
	code, err := cmdRun(ctx, args, env, &out, &errb, resume)
	if err != nil {
		_, _ = errb.Write([]byte(err.Error()))
	}
	return code, out.String(), errb.String()
}

func TestRunPrintsAnswerProgressAndTotals(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644)
	srv := scripted(t,
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)}, {Name: "read_file", Args: json.RawMessage(`{"path":"a.txt","offset":1}`)}}},
		llmtest.Turn{Text: "It says alpha."})
	code, out, errs := runCmd(t, t.Context(), testEnv(srv, t.TempDir()), false, "--workspace", ws, "--model", "m1", "what does a.txt say?")
	if code != exitOK || out != "It says alpha.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errs)
	}
	// Off a terminal, the live view is one line per event worth a line.
	for _, want := range []string{"root round 1 called read_file×2", "root round 2 answered", "events: embedded NATS at nats://127.0.0.1:",
		"\nfinished after 2 rounds · ", " out tokens · cost unknown · "} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	// --quiet: one line per root round; an unpriced model says so.
	srv2 := scripted(t, llmtest.Turn{Text: "It says alpha."})
	code, _, errs = runCmd(t, t.Context(), testEnv(srv2, t.TempDir()), false, "--workspace", ws, "--model", "m1", "--quiet", "x")
	if code != exitOK || !strings.Contains(errs, "round 1 · answer · ") || !strings.Contains(errs, "cost unknown") || strings.Contains(errs, "root round") ||
		!strings.Contains(errs, "\nfinished after 1 round · ") {
		t.Errorf("--quiet: exit %d\n%s", code, errs)
	}
	if strings.Contains(errs+out, "sk-test-secret-123") {
		t.Error("the API key leaked into output")
	}
	if r := srv.Requests(); r[0].Model != "m1" || r[0].Header.Get("Authorization") != "Bearer sk-test-secret-123" {
		t.Errorf("model %q auth %q", r[0].Model, r[0].Header.Get("Authorization"))
	}
}

func TestRunJSONAndExitCodes(t *testing.T) {
	srv := scripted(t, llmtest.Turn{Text: "fine"})
	code, out, _ := runCmd(t, t.Context(), testEnv(srv, t.TempDir()), false, "--workspace", t.TempDir(), "--json", "hi")
	var res map[string]any
	if code != exitOK || json.Unmarshal([]byte(out), &res) != nil || res["text"] != "fine" || res["status"] != "completed" {
		t.Fatalf("exit %d json %s", code, out)
	}
	// A model that refuses the key: exit 1 with the provider's message.
	bad := scripted(t, llmtest.Turn{Fail: &llmtest.Failure{Kind: llmtest.FailStatus, Status: 401, Message: "bad key"}})
	code, _, errs := runCmd(t, t.Context(), testEnv(bad, t.TempDir()), false, "--workspace", t.TempDir(), "hi")
	if code != exitFailed || !strings.Contains(errs, "bad key") {
		t.Errorf("401: exit %d, %s", code, errs)
	}
	// Round limit: exit 3.
	loop := scripted(t, llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "think", Args: json.RawMessage(`{"thought":"a"}`)}}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "think", Args: json.RawMessage(`{"thought":"b"}`)}}})
	code, _, errs = runCmd(t, t.Context(), testEnv(loop, t.TempDir()), false, "--workspace", t.TempDir(), "--max-rounds", "1", "hi")
	// In words, never the reason's token.
	if code != exitLimit || strings.Contains(errs, "round_limit") || !strings.Contains(errs, "\nstopped at its round limit after 1 round · ") ||
		!strings.Contains(errs, "\nstopped at the round limit of 1 round per agent (raise it with --max-rounds or agent.max_rounds); to go on: orchestrator resume ") {
		t.Errorf("round limit: exit %d, %s", code, errs)
	}
	// Usage and config errors: exit 2, saying what to do.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, `run needs a task, in quotes: orchestrator run --workspace DIR "Find why the cache is never invalidated and fix it"`},
		{[]string{"  "}, `run needs a task, in quotes:`},
		{[]string{"--max-rounds", "zero", "x"}, `--max-rounds: want a positive number, got "zero"`},
		{[]string{"--config", "/nonexistent.yaml", "x"}, "/nonexistent.yaml"},
		{[]string{"a", "b"}, "run takes one task; put it in quotes"},
	} {
		if code, _, errs := runCmd(t, t.Context(), testEnv(srv, t.TempDir()), false, tc.args...); code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%q: exit %d, %s; want exit 2 and %q", tc.args, code, errs, tc.want)
		}
	}
	// Through the program, the hint goes to stderr with where to read more.
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"run"}, strings.NewReader(""), &stdout, &stderr); code != exitUsage ||
		stderr.String() != "orchestrator: run needs a task, in quotes: orchestrator run --workspace DIR \"Find why the cache is never invalidated and fix it\"\n"+
			"(orchestrator run --help for usage and examples)\n" || stdout.Len() != 0 {
		t.Errorf("orchestrator run: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	noKey := runEnv{getenv: func(string) string { return "" }, home: t.TempDir(), stdin: strings.NewReader("")}
	if code, _, errs := runCmd(t, t.Context(), noKey, false, "--workspace", t.TempDir(), "x"); code != exitUsage || !strings.Contains(errs, "OPENAI_API_KEY") {
		t.Errorf("no key: exit %d %s", code, errs)
	}
}

// Interrupted: exit 130 and a resume hint naming every flag the run needs
// (its external server, config file and placement); resume with exactly
// those flags finishes the run.
func TestRunInterruptedThenResumed(t *testing.T) {
	e, _ := embeddedServer(t)
	ws := t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "team.yaml")
	os.WriteFile(cfgFile, []byte("agent:\n  max_rounds: 20\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644)
	// The workspace's config turns planning off, so the root may use shell
	// from round 1.
	os.MkdirAll(filepath.Join(ws, ".troupe"), 0o755)
	os.WriteFile(filepath.Join(ws, ".troupe", "config.yaml"), []byte("agent:\n  plan_first: {root: false}\n"), 0o644)
	srv := scripted(t,
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)}}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "shell", Args: json.RawMessage(`{"command":"sleep 300"}`)}}},
		llmtest.Turn{Text: "resumed and done"})
	ctx, cancel := context.WithCancel(t.Context())
	env := testEnv(srv, t.TempDir())
	done := make(chan struct{})
	var code int
	var errs string
	go func() {
		defer close(done)
		code, _, errs = runCmd(t, ctx, env, false, "--workspace", ws, "--yes", "--nats", e.URL(), "--config", cfgFile,
			"--placement", "worker=auto,explore=local", "read then sleep")
	}()
	checkFor(t, func() bool { return len(srv.Requests()) >= 2 && srv.InFlight() == 0 })
	if n := len(srv.Requests()); n != 2 { // else the shell call ended: it must still be running
		m := srv.Requests()[n-1].Messages
		t.Fatalf("%d requests before the interrupt, want 2: last tool result %q", n, m[len(m)-1].Content)
	}
	cancel()
	<-done
	hint := regexp.MustCompile(`Resume with:\n  orchestrator resume (\S+ --workspace \S+ --config \S+ --nats \S+ --placement \S+)\n`).FindStringSubmatch(errs)
	if code != exitInterrupt || hint == nil || !strings.Contains(errs, "\ncancelled after 2 rounds · ") {
		t.Fatalf("interrupt: exit %d\n%s", code, errs)
	}
	args := strings.Fields(hint[1])
	if want := []string{ws, cfgFile, e.URL(), "worker=auto"}; args[2] != want[0] || args[4] != want[1] || args[6] != want[2] || args[8] != want[3] {
		t.Errorf("resume hint %q, want workspace, config, nats and placement %q", hint[0], want)
	}
	code, out, errs := runCmd(t, t.Context(), env, true, args...)
	if code != exitOK || out != "resumed and done\n" {
		t.Fatalf("resume: exit %d %q\n%s", code, out, errs)
	}
}

// Interrupted before any checkpoint (in the first model call): exit 130,
// and no resume hint that would fail.
func TestRunInterruptedBeforeAnyCheckpoint(t *testing.T) {
	arrived := make(chan struct{})
	srv := scripted(t, llmtest.Turn{Dynamic: func(llmtest.Recorded) llmtest.Turn {
		close(arrived)
		return llmtest.Turn{Text: "never", Latency: llmtest.Duration(time.Minute)}
	}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	var code int
	var errs string
	go func() {
		defer close(done)
		code, _, errs = runCmd(t, ctx, testEnv(srv, t.TempDir()), false, "--workspace", t.TempDir(), "--quiet", "wait")
	}()
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the model request never arrived")
	}
	cancel()
	<-done
	if code != exitInterrupt || !strings.Contains(errs, "nothing to resume") || strings.Contains(errs, "orchestrator resume") {
		t.Errorf("exit %d\n%s", code, errs)
	}
}

// A run interrupted under an older version kept its checkpoints in the
// workspace's .troupe/runs: resume moves them to the state directory,
// saying so, and goes on from them; the workspace keeps none.
func TestResumeARunOfAnOlderVersion(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, ".troupe"), 0o755)
	os.WriteFile(filepath.Join(ws, ".troupe", "config.yaml"), []byte("agent:\n  plan_first: {root: false}\n"), 0o644)
	srv := scripted(t,
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)}}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "shell", Args: json.RawMessage(`{"command":"sleep 300"}`)}}},
		llmtest.Turn{Text: "resumed and done"})
	ctx, cancel := context.WithCancel(t.Context())
	env := testEnv(srv, t.TempDir())
	done := make(chan struct{})
	go func() {
		defer close(done)
		runCmd(t, ctx, env, false, "--workspace", ws, "--yes", "--ephemeral", "read then sleep")
	}()
	checkFor(t, func() bool { return len(srv.Requests()) >= 2 && srv.InFlight() == 0 })
	cancel()
	<-done
	// Where an older version kept them.
	state := stateDirOf(t, ws)
	if err := os.Rename(filepath.Join(state, "runs"), filepath.Join(ws, ".troupe", "runs")); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd(t, t.Context(), env, true, "--workspace", ws, "--ephemeral")
	if code != exitOK || out != "resumed and done\n" || !strings.Contains(errs, "troupe: moved ") ||
		!strings.Contains(errs, filepath.Join(ws, ".troupe", "runs")) {
		t.Fatalf("resume: exit %d %q\n%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(ws, ".troupe", "runs")); !os.IsNotExist(err) {
		t.Errorf("the workspace still holds runs: %v", err)
	}
}
