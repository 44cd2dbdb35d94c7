package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// A run against an external nats-server that is stopped while the run
// emits events and started again later. The outage is made to overlap
// the emission: the scripted model holds round 1 until the server is down
// and the orchestrator has noticed, and holds round 2 (whose request means
// round 1's events were all emitted) until the test restarts the server.
// The agents never wait on NATS, the run finishes, the orchestrator saw
// the disconnect and the reconnect, events were emitted while the server
// was down, and the events missing from the stream, counted against the
// run's own last seq per agent (tail events included), are exactly the
// events the run reported as dropped.
func TestRunSurvivesNATSRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	path, err := exec.LookPath("nats-server")
	if err != nil {
		peer.Missing(t, "nats-server", "not installed (tests/run.sh installs the Debian package)")
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

	inCall1, gate1, inCall2, gate2 := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	var calls []llmtest.ToolCall
	for i := 0; i < 6; i++ {
		calls = append(calls, llmtest.ToolCall{Name: "think", Args: json.RawMessage(fmt.Sprintf(`{"thought":"step %d"}`, i))})
	}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
		{Dynamic: func(llmtest.Recorded) llmtest.Turn { close(inCall1); <-gate1; return llmtest.Turn{ToolCalls: calls} }},
		{Dynamic: func(llmtest.Recorded) llmtest.Turn { close(inCall2); <-gate2; return llmtest.Turn{ToolCalls: calls} }},
		{Text: "done despite the outage"}}}}})
	defer srv.Close()
	run := start(t, bin.orchestrator, modelEnv(srv), "run", "--nats", url, "--workspace", repo(t, ""), "--json", "--log-level", "info", "think hard")
	wait := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-run.done:
			t.Fatalf("the run ended before %s:\n%s", what, run.errs())
		case <-time.After(time.Minute):
			t.Fatalf("no %s within a minute:\n%s", what, run.errs())
		}
	}
	wait(inCall1, "round 1's model call")
	must(t, ns.cmd.Process.Signal(syscall.SIGTERM))
	ns.wait(30 * time.Second)
	down := time.Now()
	run.waitStderr("nats disconnected", 30*time.Second)
	close(gate1) // round 1 answers: its events are emitted with the server down
	wait(inCall2, "round 2's model call")
	up := time.Now() // every event of round 1 was emitted before this
	startServer()    // the same port and store: the stream is still there
	close(gate2)
	res := runJSON(t, run)
	if res.Status != "completed" || res.Text != "done despite the outage" {
		t.Fatalf("run: %+v\n%s", res, run.errs())
	}
	if !strings.Contains(run.errs(), "nats reconnected") {
		t.Errorf("the orchestrator never reconnected:\n%s", run.errs())
	}
	if len(res.LastSeq) == 0 || res.LastSeq["root"] == 0 || res.LastSeq["run"] == 0 {
		t.Fatalf("the run reported no last seq per agent: %v", res.LastSeq)
	}

	stored := storedEvents(t, url, res.Run)
	have := map[string]map[uint64]bool{}
	var whileDown int
	for _, ev := range stored {
		if have[ev.Agent] == nil {
			have[ev.Agent] = map[uint64]bool{}
		}
		have[ev.Agent][ev.Seq] = true
		if ev.Time.After(down) && ev.Time.Before(up) {
			whileDown++
		}
		if last, ok := res.LastSeq[ev.Agent]; !ok || ev.Seq > last {
			t.Errorf("stored %s %s seq %d beyond the run's last seq %d", ev.Agent, ev.Type, ev.Seq, last)
		}
	}
	var missing uint64
	for agent, last := range res.LastSeq {
		for s := uint64(1); s <= last; s++ {
			if !have[agent][s] {
				missing++
			}
		}
	}
	// Round 1's answer and its six tool calls (llm.response, 6 × tool.started
	// and tool.finished, round 2's round.started) were emitted in the outage:
	// each is either in the stream, stamped inside the outage, or dropped.
	if whileDown+int(res.EventsDropped) < 14 {
		t.Errorf("only %d stored events were emitted during the outage and %d dropped: was the server down?", whileDown, res.EventsDropped)
	}
	if missing != res.EventsDropped {
		t.Errorf("%d events missing from the stream, %d reported dropped", missing, res.EventsDropped)
	}
	if fin := stored[len(stored)-1]; fin.Type != messages.EvtRunFinished {
		t.Errorf("the last stored event is %s", fin.Type)
	}
	t.Logf("outage %v; stored %d events, %d emitted during the outage; %d missing, %d reported dropped",
		up.Sub(down).Round(time.Millisecond), len(stored), whileDown, missing, res.EventsDropped)
}
