package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// A run against an external nats-server whose server is stopped mid-run
// and started again: the agents never wait on NATS, the run finishes, and
// every event missing from the stream is one the run reported as dropped.
func TestRunSurvivesNATSRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	path, err := exec.LookPath("nats-server")
	if err != nil {
		t.Skip("nats-server is not installed (tests/run.sh installs the Debian package)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	store := t.TempDir()
	url := "nats://127.0.0.1:" + port
	startServer := func() *proc {
		p := start(t, path, nil, "-a", "127.0.0.1", "-p", port, "-js", "-sd", store)
		poll(t, 15*time.Second, func() error {
			c, err := net.Dial("tcp", "127.0.0.1:"+port)
			if err == nil {
				c.Close()
			}
			return err
		})
		return p
	}
	ns := startServer()

	inCall1, gate1, gate2 := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var calls []llmtest.ToolCall
	for i := 0; i < 6; i++ {
		calls = append(calls, llmtest.ToolCall{Name: "think", Args: json.RawMessage(fmt.Sprintf(`{"thought":"step %d"}`, i))})
	}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
		{Dynamic: func(llmtest.Recorded) llmtest.Turn { close(inCall1); <-gate1; return llmtest.Turn{ToolCalls: calls} }},
		{Dynamic: func(llmtest.Recorded) llmtest.Turn { <-gate2; return llmtest.Turn{ToolCalls: calls} }},
		{Text: "done despite the outage"}}}}})
	defer srv.Close()
	run := start(t, bin.orchestrator, modelEnv(srv), "run", "--nats", url, "--workspace", repo(t, ""), "--json", "think hard")
	<-inCall1
	must(t, ns.cmd.Process.Signal(syscall.SIGTERM))
	ns.wait(30 * time.Second)
	close(gate1)  // round 1 ends and round 2 starts while the server is away
	startServer() // the same port and store: the stream is still there
	close(gate2)
	res := runJSON(t, run)
	if res.Status != "completed" || res.Text != "done despite the outage" {
		t.Fatalf("run: %+v\n%s", res, run.errs())
	}
	stored := storedEvents(t, url, res.Run)
	have := map[string]map[uint64]bool{}
	top := map[string]uint64{}
	for _, ev := range stored {
		if have[ev.Agent] == nil {
			have[ev.Agent] = map[uint64]bool{}
		}
		have[ev.Agent][ev.Seq] = true
		top[ev.Agent] = max(top[ev.Agent], ev.Seq)
	}
	var missing uint64
	for agent, n := range top {
		for s := uint64(1); s <= n; s++ {
			if !have[agent][s] {
				missing++
			}
		}
	}
	if missing > res.EventsDropped {
		t.Errorf("%d events missing from the stream, %d reported dropped", missing, res.EventsDropped)
	}
	t.Logf("stored %d events; %d missing, %d reported dropped", len(stored), missing, res.EventsDropped)
}
