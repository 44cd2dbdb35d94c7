package mcpserver

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// exploreScript: the root of each run delegates one explore agent (in
// whatever run: it answers from its own conversation), which finds a.txt:1
// after exploreLatency; the root then answers with what it found after
// rootLatency.
func exploreScript(exploreLatency, rootLatency time.Duration) llmtest.Script {
	root := llmtest.Turn{Dynamic: func(r llmtest.Recorded) llmtest.Turn {
		for _, m := range r.Messages {
			if m.Role == "tool" {
				return llmtest.Turn{Text: "alpha is in a.txt:1", Latency: llmtest.Duration(rootLatency)}
			}
		}
		return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"where is alpha?"}`)}}}
	}}
	found := llmtest.Turn{Text: "alpha is at a.txt:1", Latency: llmtest.Duration(exploreLatency)}
	return llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{root}, Repeat: true},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{found, found}},
	}}
}

// The SDK's client (on the 2026-07-28 revision) lists troupe's tools, and
// two calls made at once (a
// run waited for and an explore fan-out) both finish with their answers
// against the scripted model; without wait a call returns the running
// run's ID at once; check_run reports a finished run, and an unknown run
// is an error result.
func TestConcurrentCalls(t *testing.T) {
	srv := llmtest.New(exploreScript(300*time.Millisecond, 0))
	t.Cleanup(srv.Close)
	cs := connect(t, newServer(t, srv, workspace(t, "")), nil)
	if v := cs.InitializeResult().ProtocolVersion; v != statelessVersion {
		t.Errorf("the SDK's client negotiated %s over stdio, want %s", v, statelessVersion)
	}
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
		run = call(t, t.Context(), cs, "start_run", map[string]any{"task": "find alpha for me", "wait": true})
	})
	wg.Go(func() {
		explore = call(t, t.Context(), cs, "explore", map[string]any{"question": "where is alpha?", "agents": 2, "wait": true})
	})
	wg.Wait()
	for _, st := range []RunStatus{run, explore} {
		if st.Status != "completed" || !strings.Contains(st.Answer, "a.txt:1") || st.Run == "" || st.Agents.Completed != 2 {
			t.Errorf("run %+v, want completed with the answer, its root and explore agent completed", st)
		}
	}
	if run.Run == explore.Run {
		t.Errorf("both calls ran as run %s", run.Run)
	}
	if !slices.Contains(explore.Findings, "a.txt:1") {
		t.Errorf("explore findings %v, want a.txt:1", explore.Findings)
	}
	if st := call(t, t.Context(), cs, "check_run", map[string]any{"run": run.Run}); st.Status != "completed" || st.Answer != run.Answer {
		t.Errorf("check_run: %+v", st)
	}
	bg := call(t, t.Context(), cs, "explore", map[string]any{"question": "where is alpha?"})
	if bg.Status != "running" || bg.Run == "" {
		t.Errorf("explore without wait: %+v, want the running run's ID", bg)
	}
	if st := call(t, t.Context(), cs, "check_run", map[string]any{"run": bg.Run, "wait": true}); st.Status != "completed" {
		t.Errorf("check_run wait: %+v", st)
	}
	if msg := errorText(t, cs, "check_run", map[string]any{"run": "nope"}); !strings.Contains(msg, `no run "nope"`) {
		t.Errorf("check_run of an unknown run: %q", msg)
	}
}

var runInProgress = regexp.MustCompile(`^run ([0-9a-f-]{36}), `)

// A call that waits, with a progress token, gets progress notifications
// from its start (naming the run, so it can be cancelled) to its end:
// the agents running and ended, and the latest finding; their progress
// values grow.
func TestProgressWhileWaiting(t *testing.T) {
	srv := llmtest.New(exploreScript(2*time.Second, 2*time.Second))
	t.Cleanup(srv.Close)
	p := newProgressLog()
	cs := connect(t, newServer(t, srv, workspace(t, "")), &mcp.ClientOptions{ProgressNotificationHandler: p.handler})
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "explore", Arguments: map[string]any{"question": "where is alpha?", "wait": true},
		Meta: mcp.Meta{"progressToken": "tok-1"}})
	if err != nil || res.IsError {
		t.Fatalf("explore: %v %+v", err, res)
	}
	var st RunStatus
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &st)
	msgs, vals := p.all()
	if len(msgs) < 3 {
		t.Fatalf("%d progress notifications, want one at the start and one per change: %q", len(msgs), msgs)
	}
	if m := runInProgress.FindStringSubmatch(msgs[0]); m == nil || m[1] != st.Run {
		t.Errorf("first progress %q does not name run %s", msgs[0], st.Run)
	}
	running := slices.IndexFunc(msgs, func(m string) bool { return strings.Contains(m, "agents 2 running") })
	found := slices.IndexFunc(msgs, func(m string) bool {
		return strings.Contains(m, "1 completed") && strings.Contains(m, "latest finding a.txt:1")
	})
	if running < 0 || found < running {
		t.Errorf("progress %q: want the root and its explore agent running, then the finding", msgs)
	}
	for i := 1; i < len(vals); i++ {
		if vals[i] <= vals[i-1] {
			t.Errorf("progress values %v do not grow", vals)
		}
	}
}

// givenUp says the client gave a model request up: while it waited out
// its latency, or while its body was still being sent (the server read a
// cut-off request).
func givenUp(r llmtest.Recorded) bool { return r.Canceled || (r.Err != "" && r.Reply.Text == "") }

// Cancelling a call that waits for the run it started cancels the run:
// the explore agent's model request in flight is given up, none follows,
// and the run ends cancelled. A run started without wait outlives a
// cancelled check_run that waited for it, until cancel_run.
func TestCancelledCallCancelsItsRun(t *testing.T) {
	srv := llmtest.New(exploreScript(time.Hour, 0))
	t.Cleanup(srv.Close)
	p := newProgressLog()
	cs := connect(t, newServer(t, srv, workspace(t, "")), &mcp.ClientOptions{ProgressNotificationHandler: p.handler})
	ctx, cancel := context.WithCancel(t.Context())
	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "explore", Arguments: map[string]any{"question": "where is alpha?", "wait": true},
			Meta: mcp.Meta{"progressToken": 7}})
		called <- err
	}()
	m := runInProgress.FindStringSubmatch(<-p.seen)
	if m == nil {
		t.Fatal("the first progress names no run")
	}
	id := m[1]
	poll(t, "the explore agent's model request is in flight", func() bool {
		return srv.InFlight() == 1 && len(srv.Requests()) == 1 // the root's first turn answered
	})
	cancel()
	if err := <-called; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	st := call(t, t.Context(), cs, "check_run", map[string]any{"run": id, "wait": true})
	if st.Status != "cancelled" {
		t.Errorf("after the call was cancelled the run is %+v, want cancelled", st)
	}
	poll(t, "the scripted model saw the request given up", func() bool { return srv.InFlight() == 0 })
	reqs := srv.Requests()
	if len(reqs) != 2 || !givenUp(reqs[1]) || srv.InFlight() != 0 {
		for _, r := range reqs {
			t.Logf("request %d: %s %s canceled %v answered %v", r.Seq, r.Kind, r.Agent, r.Canceled, !r.Answered.IsZero())
		}
		t.Errorf("model requests %d (in flight %d), want the root's and the explore agent's, given up", len(reqs), srv.InFlight())
	}

	// A run without wait: a cancelled check_run wait leaves it running.
	bg := call(t, t.Context(), cs, "start_run", map[string]any{"task": "find alpha for me"})
	poll(t, "the background run's explore request is in flight", func() bool { return srv.InFlight() == 1 })
	wctx, wcancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer wcancel()
	if _, err := cs.CallTool(wctx, &mcp.CallToolParams{Name: "check_run", Arguments: map[string]any{"run": bg.Run, "wait": true}}); err == nil {
		t.Fatal("check_run wait ended before its deadline")
	}
	if st := call(t, t.Context(), cs, "check_run", map[string]any{"run": bg.Run}); st.Status != "running" || srv.InFlight() != 1 {
		t.Errorf("after a cancelled wait the run is %+v (in flight %d), want running", st, srv.InFlight())
	}
	if st := call(t, t.Context(), cs, "cancel_run", map[string]any{"run": bg.Run}); st.Status != "cancelled" {
		t.Errorf("cancel_run: %+v", st)
	}
}
