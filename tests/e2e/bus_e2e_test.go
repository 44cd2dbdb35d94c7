package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// fanout is a scripted model whose root delegates n explore agents in one
// turn (each greps, then answers with a path:line) and then answers.
func fanout(n int) *llmtest.Server {
	var calls []llmtest.ToolCall
	for i := 0; i < n; i++ {
		args, _ := json.Marshal(map[string]string{"type": "explore", "task": fmt.Sprintf("q%d: where is main?", i)})
		calls = append(calls, llmtest.ToolCall{Name: "delegate", Args: args})
	}
	return llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{{ToolCalls: calls}, {Text: "all answered"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"func main"}`)}}},
			{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
				return llmtest.Turn{Text: strings.SplitN(req.Task, ":", 2)[0] + ": main.go:3"}
			}},
		}},
	}})
}

// repo is a workspace with a Go file, and a user config for the programs
// started on it (see userConfig) that runs the root without a planning
// phase and lets it fan out widely.
func repo(t *testing.T, extraConfig string) string {
	t.Helper()
	ws := t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))
	userConfig(t, ws, "agent:\n  plan_first: {root: false}\n  fanout_threshold: 64\nbudget:\n  per_kind: {explore: 64}\n"+extraConfig)
	return ws
}

// homes are the HOME directories of the programs started on a workspace
// (by its path): start gives a program started with --workspace WS the
// home userConfig made for WS.
var homes sync.Map

// userConfig makes text the user's own config (~/.config/troupe/config.yaml)
// of the programs started on ws, in a HOME of their own: a workspace's own
// .troupe/config.yaml may only tighten, and these tests' settings (higher
// limits, node timings, bus users) are the user's to make.
func userConfig(t *testing.T, ws, text string) {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	p := filepath.Join(home, ".config", "troupe", "config.yaml")
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(text), 0o644))
	homes.Store(ws, home)
	t.Cleanup(func() { homes.Delete(ws) })
}

// homeFor is the HOME=... entry for a program started with args, from
// the --workspace they name; none when userConfig made no home for it.
func homeFor(args []string) []string {
	for i, a := range args {
		if a == "--workspace" && i+1 < len(args) {
			if h, ok := homes.Load(args[i+1]); ok {
				return []string{"HOME=" + h.(string)}
			}
		}
	}
	return nil
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func modelEnv(srv *llmtest.Server) []string {
	return []string{"OPENAI_BASE_URL=" + srv.URL(), "OPENAI_API_KEY=sk-test-0000", "NO_COLOR=1", "TROUPE_NATS_URL="}
}

// runResult is what run --json prints.
type runResult struct {
	Run    string `json:"run"`
	Status string `json:"status"`
	Text   string `json:"text"`
	Budget struct {
		Agents []struct {
			Agent   string `json:"agent"`
			Kind    string `json:"kind"`
			Granted int64  `json:"granted"`
			Used    struct {
				Tokens int64 `json:"tokens"`
			} `json:"used"`
		} `json:"agents"`
		Limits struct {
			Tokens int64 `json:"tokens"`
		} `json:"limits"`
		Used struct {
			Tokens int64 `json:"tokens"`
		} `json:"used"`
	} `json:"budget"`
	EventsDropped uint64            `json:"events_dropped"`
	LastSeq       map[string]uint64 `json:"last_seq"`
	SubAgents     struct {
		Completed    int      `json:"completed"`
		Failed       int      `json:"failed"`
		Cancelled    int      `json:"cancelled"`
		FirstFailure string   `json:"first_failure"`
		NotStarted   []string `json:"not_started"`
	} `json:"sub_agents"`
}

func runJSON(t *testing.T, p *proc) runResult {
	t.Helper()
	if code := p.wait(2 * time.Minute); code != 0 {
		// What says why comes first: a failed test's output may be cut in
		// its middle, and a run's --json output can be long.
		var r runResult
		_ = json.Unmarshal([]byte(p.out()), &r)
		t.Fatalf("run exited %d: status %q, sub-agents %+v\nstderr:\n%s\nstdout:\n%s", code, r.Status, r.SubAgents, p.errs(), p.out())
	}
	var r runResult
	if err := json.Unmarshal([]byte(p.out()), &r); err != nil {
		t.Fatalf("run --json output: %v\n%s", err, p.out())
	}
	return r
}

// storedEvents reads every stored event of run from the server at url.
func storedEvents(t *testing.T, url, run string) []messages.Event {
	t.Helper()
	c, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: url}, zerolog.Nop())
	must(t, err)
	defer c.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	es, err := c.Events(ctx, bus.WatchOptions{Run: run, FromStart: true})
	must(t, err)
	var out []messages.Event
	for n := uint64(0); n < es.Backlog; n++ {
		select {
		case d := <-es.C:
			out = append(out, d.Event)
		case <-time.After(30 * time.Second):
			t.Fatalf("read %d of %d stored events", n, es.Backlog)
		}
	}
	return out
}

// checkSeqs asserts every agent's events (per attempt) count from 1
// without gaps, in order.
func checkSeqs(t *testing.T, evs []messages.Event) {
	t.Helper()
	next := map[string]uint64{}
	for _, ev := range evs {
		if err := ev.Validate(); err != nil {
			t.Fatalf("invalid event %+v: %v", ev, err)
		}
		k := fmt.Sprintf("%s/%s/%d", ev.Run, ev.Agent, ev.Attempt)
		if ev.Seq != next[k]+1 {
			t.Fatalf("%s: %s has seq %d after %d", k, ev.Type, ev.Seq, next[k])
		}
		next[k] = ev.Seq
	}
}

// watchJSON runs `watch --json --from-start --run ID` as its own process
// and returns the envelopes it printed.
func watchJSON(t *testing.T, url, run string) []messages.Event {
	t.Helper()
	w := start(t, bin.orchestrator, []string{"NO_COLOR=1"}, "watch", "--nats", url, "--run", run, "--from-start", "--json")
	if code := w.wait(time.Minute); code != 0 {
		t.Fatalf("watch exited %d\n%s", code, w.errs())
	}
	var out []messages.Event
	for _, line := range strings.Split(strings.TrimSpace(w.out()), "\n") {
		var ev messages.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("watch printed a line that is not an event: %q", line)
		}
		out = append(out, ev)
	}
	return out
}

func sameEvents(t *testing.T, got, want []messages.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].ID != want[i].ID {
			t.Fatalf("event %d: %s %s, want %s %s", i, got[i].Type, got[i].ID, want[i].Type, want[i].ID)
		}
	}
}

// `serve` in its own process; a run in another publishes every event to
// it; `watch --json --from-start` in a third prints exactly the stored
// events, and SIGTERM stops serve cleanly.
func TestServeRunWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	srv := fanout(4)
	defer srv.Close()
	serve := start(t, bin.orchestrator, nil, "serve", "--listen", "127.0.0.1:0", "--no-auth")
	url := serve.firstLine(30 * time.Second)
	if !strings.HasPrefix(url, "nats://127.0.0.1:") {
		t.Fatalf("serve printed %q", url)
	}
	ws := repo(t, "")
	r := start(t, bin.orchestrator, modelEnv(srv), "run", "--nats", url, "--workspace", ws, "--json", "find main")
	res := runJSON(t, r)
	if res.Status != "completed" || res.Text != "all answered" || res.EventsDropped != 0 {
		t.Fatalf("run: %+v", res)
	}
	if !strings.Contains(r.errs(), "watch: orchestrator watch --nats "+url+" --run "+res.Run) {
		t.Errorf("run did not say how to watch:\n%s", r.errs())
	}
	stored := storedEvents(t, url, res.Run)
	checkSeqs(t, stored)
	types := map[string]int{}
	for _, ev := range stored {
		types[ev.Type]++
	}
	if types[messages.EvtRunStarted] != 1 || types[messages.EvtRunFinished] != 1 || types[messages.EvtAgentFinished] != 5 {
		t.Errorf("event types %v", types)
	}
	sameEvents(t, watchJSON(t, url, res.Run), stored)
	must(t, serve.cmd.Process.Signal(syscall.SIGTERM))
	if code := serve.wait(30 * time.Second); code != 0 {
		t.Errorf("serve exited %d after SIGTERM:\n%s", code, serve.errs())
	}
}

// The same run against an external nats-server process (the Debian
// package) works unchanged.
func TestRunAgainstExternalServer(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	path, err := exec.LookPath("nats-server")
	if err != nil {
		peer.Missing(t, "nats-server", "not installed (tests/run.sh installs the Debian package)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ns := start(t, path, nil, "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", t.TempDir())
	url := "nats://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats-server not listening: %s", ns.errs())
		}
		<-time.After(20 * time.Millisecond)
	}
	srv := fanout(3)
	defer srv.Close()
	res := runJSON(t, start(t, bin.orchestrator, modelEnv(srv), "run", "--nats", url, "--workspace", repo(t, ""), "--json", "find main"))
	if res.Status != "completed" {
		t.Fatalf("run: %+v", res)
	}
	stored := storedEvents(t, url, res.Run)
	checkSeqs(t, stored)
	sameEvents(t, watchJSON(t, url, res.Run), stored)
}

// A NATS URL that does not answer is a usage error naming the setting,
// before any agent starts.
func TestRunBadNATSURL(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	srv := fanout(1)
	defer srv.Close()
	r := start(t, bin.orchestrator, modelEnv(srv), "run", "--nats", "nats://127.0.0.1:1", "--workspace", repo(t, ""), "x")
	if code := r.wait(time.Minute); code != 2 || !strings.Contains(r.errs(), "--nats nats://127.0.0.1:1") {
		t.Errorf("exit %d, stderr:\n%s", code, r.errs())
	}
	if len(srv.Requests()) != 0 {
		t.Error("an agent started before NATS was checked")
	}
}

// Wrong credentials are a usage error (exit 2) naming the setting, before
// any agent starts: a wrong token against `serve` with a token, a wrong
// password against an external nats-server with a user and password.
func TestRunWrongNATSCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	srv := fanout(1)
	defer srv.Close()
	serve := start(t, bin.orchestrator, []string{"TROUPE_NATS_TOKEN=right-token"}, "serve", "--listen", "127.0.0.1:0")
	url := serve.firstLine(30 * time.Second)
	r := start(t, bin.orchestrator, append(modelEnv(srv), "TROUPE_NATS_TOKEN=wrong-token"), "run", "--nats", url, "--workspace", repo(t, ""), "x")
	if code := r.wait(time.Minute); code != 2 || !strings.Contains(r.errs(), "--nats "+url) || !strings.Contains(r.errs(), "nats.token") ||
		strings.Contains(r.errs(), "wrong-token") {
		t.Errorf("wrong token: exit %d, stderr:\n%s", code, r.errs())
	}
	if len(srv.Requests()) != 0 {
		t.Error("an agent started before the token was checked")
	}
	ok := start(t, bin.orchestrator, append(modelEnv(srv), "TROUPE_NATS_TOKEN=right-token"), "run", "--nats", url, "--workspace", repo(t, ""), "--json", "x")
	if res := runJSON(t, ok); res.Status != "completed" {
		t.Errorf("the right token: %+v", res)
	}
	before := len(srv.Requests())

	path, err := exec.LookPath("nats-server")
	if err != nil {
		peer.Missing(t, "nats-server", "not installed (tests/run.sh installs the Debian package)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	start(t, path, nil, "-a", "127.0.0.1", "-p", port, "-js", "-sd", t.TempDir(), "--user", "agent", "--pass", "right-pass")
	poll(t, 15*time.Second, func() error {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
		}
		return err
	})
	r = start(t, bin.orchestrator, append(modelEnv(srv), "TROUPE_NATS_PASSWORD=wrong-pass"), "run", "--nats", "nats://127.0.0.1:"+port,
		"--workspace", repo(t, "nats:\n  user: agent\n"), "x")
	if code := r.wait(time.Minute); code != 2 || !strings.Contains(r.errs(), "nats.user agent with nats.password") || strings.Contains(r.errs(), "wrong-pass") {
		t.Errorf("wrong password: exit %d, stderr:\n%s", code, r.errs())
	}
	if n := len(srv.Requests()); n != before {
		t.Errorf("%d model requests after wrong credentials: an agent started", n-before)
	}
}
