package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// pollUntil polls cond every 100 ms for up to a minute; what names the
// condition when it is not met.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not met in a minute: %s", what)
		}
		<-time.After(100 * time.Millisecond)
	}
}

// webScript is a run of a root that delegates three explore agents at
// once; each explore answers after a second, so scrapes and page loads
// happen while it runs.
func webScript() llmtest.Script {
	del := func(task string) llmtest.ToolCall {
		return llmtest.ToolCall{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"` + task + `"}`)}
	}
	second := llmtest.Duration(time.Second)
	return llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{del("look at a"), del("look at b"), del("look at d")}, Usage: &llmtest.Usage{PromptTokens: 300, CompletionTokens: 30}},
			{Text: "all looked at", Usage: &llmtest.Usage{PromptTokens: 500, CompletionTokens: 12}},
		}},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{{Text: "seen", Latency: second, Usage: &llmtest.Usage{PromptTokens: 100, CompletionTokens: 7}}}},
	}}
}

// runEvents reads a finished run's events from the stream: its agents,
// the run's final token total and each kind's tokens.
func runEvents(t *testing.T, natsURL string) (run string, agents []string, total int64, byKind map[string]int64) {
	t.Helper()
	conn, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: natsURL}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	es, err := conn.Events(t.Context(), bus.WatchOptions{FromStart: true})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Stop()
	byKind = map[string]int64{}
	seen := map[string]bool{}
	for d := range es.C {
		ev := d.Event
		if ev.Run == "nodes" {
			continue
		}
		run = ev.Run
		if ev.Agent != "run" && !seen[ev.Agent] {
			seen[ev.Agent] = true
			agents = append(agents, ev.Agent)
		}
		switch ev.Type {
		case messages.EvtLLMResponse:
			r, _ := messages.DecodeAs[messages.LLMResponse](ev)
			byKind[ev.Kind] += int64(r.TokensIn + r.TokensOut)
		case messages.EvtRunFinished:
			f, _ := messages.DecodeAs[messages.RunFinished](ev)
			return run, agents, f.Tokens, byKind
		}
	}
	t.Fatal("the events stream ended before run.finished")
	return
}

var webAddrLine = regexp.MustCompile(`web view at http://([^/ ]+)/`)

// serveWithHTTP starts serve with --http on a free port and returns the
// NATS URL and the web address.
func serveWithHTTP(t *testing.T) (*serving, string) {
	s := startServe(t, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--no-auth") // roles have tests of their own
	m := webAddrLine.FindStringSubmatch(s.stderr.String())
	if m == nil {
		t.Fatalf("serve did not say where the web view is:\n%s", s.stderr)
	}
	return s, m[1]
}

// startPrometheus runs a real Prometheus server scraping target every
// second and returns its address.
func startPrometheus(t *testing.T, target string) string {
	return runPrometheus(t, fmt.Sprintf("  - job_name: troupe\n    static_configs:\n      - targets: [%q]\n", target))
}

// runPrometheus runs a real Prometheus server with these scrape_configs
// entries, scraping every second, and returns its address.
func runPrometheus(t *testing.T, scrapeConfigs string) string {
	bin := peer.Need(t, "prometheus")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	doc := "global:\n  scrape_interval: 1s\nscrape_configs:\n" + scrapeConfigs
	if err := os.WriteFile(cfg, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("prometheus log:\n%s", b)
		}
	})
	return addr
}

// promQuery asks Prometheus' query API and returns each series' value by
// its kind label.
func promQuery(t *testing.T, addr, q string) map[string]float64 {
	return promQueryBy(t, addr, q, "kind")
}

// A scripted run against `serve --http`: a real Prometheus server scrapes
// /metrics and its query API has troupe_tokens_total for each kind of the
// run, at the tokens the events report; headless Chromium shows the run's
// tree with every agent and the final token total, live and again on a
// second load after the run (a replay); a screenshot is saved.
func TestServeHTTPWebViewAndMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus and Chromium")
	}
	promBin, chromeBin := peer.Need(t, "prometheus"), peer.Need(t, "chromium")
	_, _ = promBin, chromeBin
	s, web := serveWithHTTP(t)
	prom := startPrometheus(t, web)
	page := startBrowser(t, "http://"+web+"/")

	srv := llmtest.New(webScript())
	t.Cleanup(srv.Close)
	code, out, errs := runCmd(t, t.Context(), testEnv(srv, t.TempDir()), false, "--workspace", metricsWorkspace(t), "--yes", "--quiet",
		"--nats", s.url, "look at everything")
	if code != exitOK || !strings.Contains(out, "all looked at") {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
	}
	run, agents, total, byKind := runEvents(t, s.url)
	if len(agents) != 4 || total == 0 || byKind["explore"] != 3*107 {
		t.Fatalf("run %s: agents %v, tokens %d, by kind %v", run, agents, total, byKind)
	}

	// Prometheus has each kind's tokens of the run.
	q := fmt.Sprintf(`sum by (kind) (troupe_tokens_total{run=%q})`, run)
	var got map[string]float64
	pollUntil(t, "prometheus has the run's tokens by kind", func() bool {
		got = promQuery(t, prom, q)
		return got["root"] == float64(byKind["root"]) && got["explore"] == float64(byKind["explore"])
	})

	// The page, loaded before the run, followed it live.
	page.navigate("http://" + web + "/#/run/" + run)
	checkPage(t, page, agents, total)
	page.screenshot(filepath.Join(t.ArtifactDir(), "web-view-run.png"))

	// A second load after the run replays it from the stream.
	page.navigate("about:blank")
	page.navigate("http://" + web + "/#/run/" + run)
	checkPage(t, page, agents, total)
	page.navigate("http://" + web + "/#/run/" + run + "/agent/root")
	pollUntil(t, "the root's timeline shows its delegate calls", func() bool {
		return strings.Count(page.eval("document.body.innerText"), "→ delegate") == 3
	})
	page.navigate("http://" + web + "/#/")
	pollUntil(t, "the runs list shows the finished run", func() bool {
		txt := page.eval("document.body.innerText")
		return strings.Contains(txt, run) && strings.Contains(txt, "completed")
	})
	page.screenshot(filepath.Join(t.ArtifactDir(), "web-view-runs.png"))
	t.Logf("screenshots in %s", t.ArtifactDir())
}

// checkPage waits for the page to hold every agent and the run's total.
func checkPage(t *testing.T, page *browser, agents []string, total int64) {
	t.Helper()
	var txt string
	pollUntil(t, "the page shows every agent and the final token total", func() bool {
		txt = page.eval("document.body.innerText")
		for _, a := range agents {
			if !strings.Contains(txt, a) {
				return false
			}
		}
		return page.eval(`(document.getElementById("run-tokens")||{}).textContent`) == strconv.FormatInt(total, 10)
	})
}

// --http beyond loopback needs --http-public, and --http-public a token
// (serve and watch alike): neither starts without.
func TestServeHTTPLoopbackOnly(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--http", "0.0.0.0:0"}, "add --http-public"},
		{[]string{"--http", "0.0.0.0:0", "--http-public"}, "--http-public needs --http-token-file"},
		{[]string{"--http", "127.0.0.1:0", "--http-public"}, "--http-public needs --http-token-file"},
	} {
		code, err := cmdServe(t.Context(), append([]string{"--listen", "127.0.0.1:0"}, c.args...), func(string) string { return "" }, io.Discard, io.Discard)
		if code != exitUsage || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("serve %v: exit %d, %v; want a usage error saying %q", c.args, code, err, c.want)
		}
	}
	code, err := cmdWatch(t.Context(), []string{"--nats", "nats://127.0.0.1:1", "--web", "0.0.0.0:0", "--http-public"}, func(string) string { return "" },
		strings.NewReader(""), io.Discard, io.Discard)
	if code != exitUsage || err == nil || !strings.Contains(err.Error(), "--http-public needs --http-token-file") {
		t.Errorf("watch --web --http-public: exit %d, %v", code, err)
	}
}
