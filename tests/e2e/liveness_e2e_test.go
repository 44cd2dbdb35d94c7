package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// byKey is the API key a model request came with: each node process gets
// its own, so a request says which node made it.
func byKey(r llmtest.Recorded) string {
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// TestNodeKilledTaskMovesOn: with the default timing settings (only the
// model's latency scripted), a node SIGKILLed while its agent waits on the
// model is reported lost (node.left) before the run ends, and the task
// runs on the other node, whose key its next model calls carry.
func TestNodeKilledTaskMovesOn(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	hang, called := make(chan struct{}), make(chan struct{})
	defer close(hang)
	var once sync.Once
	args, _ := json.Marshal(map[string]string{"type": "explore", "task": "q0: where is main?"})
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: args}}}, {Text: "all answered"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
			if byKey(req) == "sk-victim" {
				once.Do(func() { close(called) })
				<-hang // the victim's agent waits on the model until it is killed
			}
			return llmtest.Turn{Text: "q0: main.go:3"}
		}}}},
	}})
	defer srv.Close()
	run := start(t, bin.orchestrator, modelEnv(srv), "run", "--workspace", repo(t, ""), "--json",
		"--placement", "explore=remote", "--ephemeral", "find main")
	run.waitStderr("events: ", 30*time.Second)
	url := natsURL.FindStringSubmatch(run.errs())[1]
	col := collect(t, url, roleCreds(run.errs(), "watcher"))
	node := func(key string) (*proc, string) {
		p := start(t, bin.node, append(modelEnv(srv), "OPENAI_API_KEY="+key), append([]string{"--nats", url, "--workspace", repo(t, ""),
			"--slots", "1"}, nodeCredsArgs(t, run.errs(), strings.TrimPrefix(key, "sk-"))...)...)
		p.waitStderr(" ready", 30*time.Second)
		return p, nodeReady.FindStringSubmatch(p.errs())[1]
	}
	victim, victimID := node("sk-victim")
	callsOf := func(key string) []llmtest.Recorded {
		var out []llmtest.Recorded
		for _, r := range srv.Requests() {
			if r.Kind == "explore" && byKey(r) == key {
				out = append(out, r)
			}
		}
		return out
	}
	select {
	case <-called:
	case <-time.After(time.Minute):
		t.Fatalf("the victim never called the model:\n%s\nrun:\n%s", victim.errs(), run.errs())
	}
	_, otherID := node("sk-other")
	killed := time.Now()
	must(t, victim.cmd.Process.Signal(syscall.SIGKILL))
	res := runJSON(t, run)
	if res.Status != "completed" || res.Text != "all answered" {
		t.Fatalf("run: %+v\n%s", res, run.errs())
	}
	other := callsOf("sk-other")
	if len(other) == 0 {
		t.Fatalf("the task never ran on the other node %s", otherID)
	}
	t.Logf("SIGKILL → the task's first model call from the other node: %s", other[0].Received.Sub(killed).Round(time.Millisecond))
	// node.left (lost) came before the run's end, and the task was
	// started again on the other node, on a later attempt.
	var evs []messages.Event
	poll(t, 30*time.Second, func() error {
		evs = col.events()
		if !slices.ContainsFunc(evs, func(ev messages.Event) bool { return ev.Type == messages.EvtRunFinished }) {
			return fmt.Errorf("no run.finished yet")
		}
		return nil
	})
	left, finished, restarted := -1, -1, false
	for i, ev := range evs {
		switch {
		case ev.Type == messages.EvtNodeLeft && left < 0:
			if l, err := messages.DecodeAs[messages.NodeLeft](ev); err == nil && l.Node == victimID && l.Reason == "lost" {
				left = i
			}
		case ev.Type == messages.EvtRunFinished:
			finished = i
		case ev.Type == messages.EvtAgentStarted && ev.Node == otherID && ev.Attempt > 1:
			restarted = true
		}
	}
	if left < 0 || left > finished {
		t.Errorf("node.left (lost) of %s at event %d, run.finished at %d", victimID, left, finished)
	}
	if !restarted {
		t.Errorf("no agent started on %s on a later attempt", otherID)
	}
}
