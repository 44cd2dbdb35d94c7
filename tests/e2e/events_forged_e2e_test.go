package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// forged is the figure of issue 29: 205 well-formed llm.response events
// for made-up runs, published with node.creds, took every per-run metric
// label, added $4.50 to troupe_cost_dollars_total and put 205 runs in the
// web view.
const forged = 205

var webAddr = regexp.MustCompile(`web view at http://(\S+)/ `)

// On `orchestrator serve --http`, a node and a run with remote agents
// (held on their first model call), a forger holding node.creds tries the
// issue's 205 llm.response events for made-up runs, on the events
// subjects (the server refuses each) and relayed (no requester answers
// for a made-up run), and 205 more relayed for the real run's agent
// without its delivery's proof (the run refuses them). None reaches the
// stream, serve's web view or its /metrics; the run ends as it would have,
// counting 205 events refused; the node's own events all arrive.
func TestForgedEventsReachNoWatcher(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	store := t.TempDir()
	serve := start(t, bin.orchestrator, nil, "serve", "--listen", "127.0.0.1:0", "--store", store, "--http", "127.0.0.1:0")
	url := serve.firstLine(30 * time.Second)
	serve.waitStderr("web view at http://", 30*time.Second)
	m := webAddr.FindStringSubmatch(serve.errs())
	if m == nil {
		t.Fatalf("serve did not say where its web view is:\n%s", serve.errs())
	}
	web := "http://" + m[1]
	dir := filepath.Join(store, "creds")
	creds := func(r bus.Role) string { return bus.CredsPath(dir, r) }
	gate := make(chan struct{})
	srv := gatedFanoutN(3, gate)
	defer srv.Close()
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	node := start(t, bin.node, modelEnv(srv), "--nats", url, "--creds", firstNodeCreds(dir), "--workspace", repo(t, ""), "--slots", "4")
	node.waitStderr(" ready", 30*time.Second)
	col := collect(t, url, creds(bus.RoleWatcher))
	run := start(t, bin.orchestrator, modelEnv(srv), "run", "--nats", url, "--creds", creds(bus.RoleRequester),
		"--workspace", repo(t, ""), "--json", "--placement", "explore=remote", "find main")
	var runID string
	var agents []string
	poll(t, 60*time.Second, func() error {
		agents = agents[:0]
		for _, ev := range col.events() {
			if ev.Type == messages.EvtAgentStarted && ev.Node != "" {
				runID = ev.Run
				agents = append(agents, ev.Agent)
			}
		}
		if len(agents) < 3 {
			return fmt.Errorf("%d remote agents started", len(agents))
		}
		return nil
	})

	violations := forgeEvents(t, url, strings.TrimSpace(orchestratorOK(t, "auth", "node", "node-2", "--dir", dir)), runID, agents[0])
	close(gate)
	res := runJSON(t, run)
	if res.Status != "completed" || res.Text != "all answered" {
		t.Fatalf("run after the forgeries: %+v\n%s", res, run.errs())
	}
	var out struct {
		Refused struct {
			Events uint64 `json:"events"`
		} `json:"refused"`
	}
	must(t, json.Unmarshal([]byte(run.out()), &out))
	if out.Refused.Events != forged {
		t.Errorf("the run counted %d events refused, want %d", out.Refused.Events, forged)
	}

	// The stream, as a watcher reads it: the real run's events, its remote
	// agents' included, and nothing forged.
	var stored []messages.Event
	poll(t, 30*time.Second, func() error {
		stored = stored[:0]
		finished := false
		for _, ev := range col.events() {
			if strings.HasPrefix(ev.Run, "forged-") || ev.Node == "forger" {
				return fmt.Errorf("a forged event reached a watcher: %+v", ev)
			}
			if ev.Run == runID {
				stored = append(stored, ev)
				finished = finished || ev.Type == messages.EvtRunFinished
			}
		}
		if !finished {
			return errors.New("run.finished has not reached the watcher")
		}
		return nil
	})
	llm, remote := 0, 0
	for _, ev := range stored {
		if ev.Type == messages.EvtLLMResponse {
			llm++
		}
		if ev.Type == messages.EvtAgentFinished && ev.Node != "" {
			remote++
		}
	}
	if remote != 3 {
		t.Errorf("%d remote agents finished in the stream, want 3", remote)
	}
	checkMetrics(t, web, llm)
	checkWebView(t, web, runID)
	poll(t, 10*time.Second, func() error {
		if n := violations.Load(); n != forged {
			return fmt.Errorf("%d publishes refused by the server, want %d", n, forged)
		}
		return nil
	})
}

// forgeEvents is the forger's every attempt, with node.creds: the
// issue's 205 events for made-up runs on the events subjects and relayed,
// and 205 relayed for the real run's agent without its delivery's proof.
// It returns the count of the server's refusals, which come
// asynchronously.
func forgeEvents(t *testing.T, url, creds, run, agent string) *atomic.Int64 {
	t.Helper()
	violations := new(atomic.Int64)
	// The node's own credentials, with its private inbox: the only one
	// where the server lets it hear the answers to its requests.
	b, err := os.ReadFile(creds)
	must(t, err)
	id, err := bus.ParseCreds(b)
	must(t, err)
	nc, err := nats.Connect(url, nats.UserCredentials(creds), nats.CustomInboxPrefix(id.Inbox()), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			violations.Add(1)
		}
	}))
	must(t, err)
	t.Cleanup(nc.Close)
	event := func(run, agent string, seq uint64) []byte {
		ev, err := messages.NewEvent(run, agent, messages.EvtLLMResponse, seq, messages.LLMResponse{Round: 1, Model: "big",
			TokensIn: 50_000, TokensOut: 2_000, CostUSD: 4.5 / forged, CostKnown: true, FinishReason: "stop"})
		must(t, err)
		ev.Kind, ev.Node = "explore", "forger"
		b, err := json.Marshal(ev)
		must(t, err)
		return b
	}
	p := bus.DefaultPrefix
	var batch []byte
	for i := range forged {
		fake := fmt.Sprintf("forged-%03d", i)
		must(t, nc.Publish(bus.EventSubject(p, fake, "explore-1", messages.EvtLLMResponse), event(fake, "explore-1", 1)))
		if _, err := nc.Request(bus.CtlSubject(p, fake, "explore-1", "events"), event(fake, "explore-1", 1), 10*time.Second); !errors.Is(err, nats.ErrNoResponders) {
			t.Errorf("a relay for made-up run %s: %v, want no responders", fake, err)
		}
		batch = append(append(batch, event(run, agent, uint64(1000+i))...), '\n')
	}
	m, err := nc.Request(bus.CtlSubject(p, run, agent, "events"), batch, 10*time.Second)
	must(t, err)
	var rep messages.EventBatchReply
	must(t, json.Unmarshal(m.Data, &rep))
	if rep.Refused != forged || rep.Accepted != 0 || rep.Error == nil {
		t.Errorf("a batch for the real run without the delivery's proof: %+v", rep)
	}
	must(t, nc.Flush())
	return violations
}

// checkMetrics scrapes serve's /metrics: no forged run, no forged cost,
// and as many llm.response events counted as the stream holds.
func checkMetrics(t *testing.T, web string, llm int) {
	t.Helper()
	want := fmt.Sprintf(`troupe_events_total{type="llm.response"} %d`, llm)
	poll(t, 30*time.Second, func() error {
		resp, err := http.Get(web + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		text := string(b)
		if strings.Contains(text, "forged-") {
			return errors.New("a forged run in /metrics")
		}
		cost := 0.0
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "troupe_cost_dollars_total") {
				var v float64
				if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
					cost += v
				}
			}
		}
		if cost >= 4.5/2 {
			return fmt.Errorf("$%.2f of cost in /metrics: the forged events' is $4.50", cost)
		}
		if !strings.Contains(text, want) {
			return fmt.Errorf("/metrics lacks %q", want)
		}
		return nil
	})
}

// checkWebView reads serve's web view's events until it has caught up
// with the stream: the real run is there, no forged one.
func checkWebView(t *testing.T, web, run string) {
	t.Helper()
	resp, err := http.Get(web + "/events")
	must(t, err)
	defer resp.Body.Close()
	runs := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
			if name == "caught_up" {
				if !runs[run] {
					t.Errorf("the web view does not show run %s", run)
				}
				for r := range runs {
					if strings.HasPrefix(r, "forged-") {
						t.Errorf("the web view shows forged run %s", r)
					}
				}
				return
			}
		case strings.HasPrefix(line, "data: ") && name == "events":
			var evs []messages.Event
			must(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &evs))
			for _, ev := range evs {
				runs[ev.Run] = true
				if ev.Node == "forger" {
					t.Errorf("the web view shows a forged event: %+v", ev)
				}
			}
		}
	}
	t.Fatalf("the web view's events ended before it caught up: %v", sc.Err())
}
