package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// TestOrchestratorKilledRunIsLostAndResumed: with the default timing
// settings, an orchestrator SIGKILLed while its remote tasks run is lost:
// once its run's lease lapses the node stops the run's agents (no model
// call for it after that), watch --from-start marks the run lost and
// ends, and resume --nats --placement finishes it, with no model call for
// the tasks that had finished.
func TestOrchestratorKilledRunIsLostAndResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	const quick, slow = 4, 4
	opts := &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, JetStream: true, StoreDir: t.TempDir()}
	s, err := server.NewServer(opts)
	must(t, err)
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	defer s.Shutdown()
	url := s.ClientURL()

	var calls []llmtest.ToolCall
	for i := 0; i < quick+slow; i++ {
		args, _ := json.Marshal(map[string]string{"type": "explore", "task": fmt.Sprintf("q%d: where is main?", i)})
		calls = append(calls, llmtest.ToolCall{Name: "delegate", Args: args})
	}
	gate, held := make(chan struct{}), make(chan string, slow)
	var mu sync.Mutex
	seen := map[string]int{}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Repeat: true, Turns: []llmtest.Turn{{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			for _, m := range req.Messages {
				if m.Role == "tool" {
					return llmtest.Turn{Text: "all answered"}
				}
			}
			return llmtest.Turn{ToolCalls: calls}
		}}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			q := strings.SplitN(req.Task, ":", 2)[0]
			mu.Lock()
			seen[q]++
			first := seen[q] == 1
			mu.Unlock()
			var n int
			fmt.Sscanf(q, "q%d", &n)
			if n >= quick && first {
				held <- q
				<-gate // the slow tasks' first calls wait until the run is lost
			}
			return llmtest.Turn{Text: q + ": main.go:3"}
		}}}},
	}})
	defer srv.Close()
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	ws := repo(t, "")
	node := start(t, bin.node, modelEnv(srv), "--nats", url, "--workspace", ws, "--slots", "8")
	node.waitStderr(" ready", 30*time.Second)
	run := start(t, bin.orchestrator, modelEnv(srv), "run", "--workspace", ws, "--json", "--nats", url,
		"--placement", "explore=remote", "find main")
	col := collect(t, url, "")
	for i := 0; i < slow; i++ {
		select {
		case <-held:
		case <-time.After(time.Minute):
			t.Fatalf("the slow tasks did not all start:\n%s\n%s", run.errs(), node.errs())
		}
	}
	// The quick tasks' results are in the root's journal: their delegate
	// calls finished.
	var runID string
	poll(t, time.Minute, func() error {
		done := 0
		for _, ev := range col.events() {
			runID = ev.Run
			if ev.Type == messages.EvtToolFinished && ev.Agent == "root" {
				done++
			}
		}
		if done < quick {
			return fmt.Errorf("%d delegate calls finished", done)
		}
		return nil
	})
	must(t, run.cmd.Process.Signal(syscall.SIGKILL))
	run.wait(time.Minute)

	// The node stops the slow agents once the lease lapses.
	poll(t, time.Minute, func() error {
		if n := strings.Count(node.errs(), "lease lapsed"); n < slow {
			return fmt.Errorf("%d agents stopped for the lapsed lease", n)
		}
		return nil
	})
	lapsedAt := len(srv.Requests())
	w := start(t, bin.orchestrator, []string{"NO_COLOR=1"}, "watch", "--nats", url, "--from-start", "--json", "--run", runID)
	if code := w.wait(time.Minute); code != 0 || !strings.Contains(w.errs(), "lost") {
		t.Fatalf("watch exited %d:\n%s", code, w.errs())
	}
	close(gate) // the stopped agents' calls return; nobody asks again
	for _, r := range srv.Requests()[lapsedAt:] {
		if r.Kind == "explore" {
			t.Errorf("model call for %s after the run's lease lapsed", r.Task)
		}
	}

	resumed := start(t, bin.orchestrator, modelEnv(srv), "resume", runID, "--workspace", ws, "--json", "--nats", url,
		"--placement", "explore=remote")
	res := runJSON(t, resumed)
	if res.Status != "completed" || res.Text != "all answered" {
		t.Fatalf("resumed: %+v\n%s", res, resumed.errs())
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 0; i < quick+slow; i++ {
		q := fmt.Sprintf("q%d", i)
		want := 1 // the quick tasks: never again
		if i >= quick {
			want = 2 // the slow ones: stopped, then run again once
		}
		if seen[q] != want {
			t.Errorf("%s: %d model calls, want %d", q, seen[q], want)
		}
	}
	if t.Failed() {
		for _, r := range srv.Requests() {
			if r.Kind == "root" {
				for _, m := range r.Messages {
					if m.Role == "tool" {
						t.Logf("root %d tool: %.200s", r.Seq, m.Content)
					}
				}
			}
		}
		t.Logf("resumed:\n%s\nnode:\n%s", resumed.errs(), node.errs())
	}
}
