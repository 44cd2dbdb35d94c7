package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/messages"
)

var (
	webAt     = regexp.MustCompile(`web view at http://([^/ ]+)/`)
	metricsAt = regexp.MustCompile(`metrics at http://([^/ ]+)/metrics`)
)

// prometheus is a real Prometheus server scraping each job's target every
// second.
type prometheus struct {
	t    *testing.T
	addr string
}

func startPrometheus(t *testing.T, jobs map[string]string) *prometheus {
	t.Helper()
	bin := peer.Need(t, "prometheus")
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n")
	for job, target := range jobs {
		fmt.Fprintf(&b, "  - job_name: %q\n    static_configs:\n      - targets: [%q]\n", job, target)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	must(t, os.WriteFile(cfg, []byte(b.String()), 0o644))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	p := startCmd(t, cmd)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("prometheus:\n%s", p.errs())
		}
	})
	return &prometheus{t: t, addr: addr}
}

// promSeries is one series of a query's answer.
type promSeries struct {
	Labels map[string]string
	Value  float64
}

// query asks Prometheus' query API (nil while it is not up).
func (p *prometheus) query(q string) []promSeries {
	resp, err := http.Get("http://" + p.addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&r) != nil {
		return nil
	}
	var out []promSeries
	for _, s := range r.Data.Result {
		v, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		out = append(out, promSeries{Labels: s.Metric, Value: v})
	}
	return out
}

// one is the value of a query answered by one series.
func (p *prometheus) one(q string) (float64, bool) {
	s := p.query(q)
	if len(s) != 1 {
		return 0, false
	}
	return s[0].Value, true
}

// Prometheus 2.42 (Debian's) scraping `serve --http` with credentials
// (its web view holds the watcher role) and a node's own `--http`:
//   - summed over both jobs, troupe_tokens_total is the run's tokens
//     exactly once, and no metric name is exported by both jobs;
//   - no label value of any troupe_* series is the run's ID or an
//     agent's ID;
//   - serve sees the node in the registry with its free slots;
//   - with the node gone and two tasks queued, troupe_queue_depth is 2;
//   - serve never logged a permissions violation. How long serve's
//     scrapes take is logged (a figure, not asserted).
func TestMetricsAsPrometheusSeesThem(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	peer.Need(t, "prometheus")
	store := t.TempDir()
	serve := start(t, bin.orchestrator, nil, "serve", "--listen", "127.0.0.1:0", "--store", store, "--http", "127.0.0.1:0")
	natsAt := serve.firstLine(30 * time.Second)
	serve.waitStderr("web view at", 30*time.Second)
	web := webAt.FindStringSubmatch(serve.errs())[1]
	creds := func(r bus.Role) string { return bus.CredsPath(filepath.Join(store, "creds"), r) }

	srv := fanout(3)
	defer srv.Close()
	node := start(t, bin.node, modelEnv(srv), "--nats", natsAt, "--creds", firstNodeCreds(filepath.Join(store, "creds")), "--workspace", repo(t, ""),
		"--slots", "2", "--http", "127.0.0.1:0")
	node.waitStderr(" ready", 30*time.Second)
	nodeID := nodeReady.FindStringSubmatch(node.errs())[1]
	prom := startPrometheus(t, map[string]string{"troupe": web, "troupe-node": metricsAt.FindStringSubmatch(node.errs())[1]})

	run := start(t, bin.orchestrator, modelEnv(srv), "run", "--nats", natsAt, "--creds", creds(bus.RoleRequester),
		"--workspace", repo(t, ""), "--json", "--placement", "explore=remote", "find main")
	res := runJSON(t, run)
	ids := map[string]bool{res.Run: true}
	for _, a := range res.Budget.Agents {
		if a.Agent != "root" { // a fixed name (and a kind's)
			ids[a.Agent] = true
		}
	}
	if len(ids) != 4 {
		t.Fatalf("run %+v: want the run and 3 explore agents", res)
	}

	// The run's tokens once, whichever jobs are summed.
	want := float64(res.Budget.Used.Tokens)
	poll(t, time.Minute, func() error {
		if got, _ := prom.one(`sum(troupe_tokens_total)`); got != want {
			return fmt.Errorf("sum(troupe_tokens_total) = %v, want %v", got, want)
		}
		if got, ok := prom.one(`troupe_node_tasks_completed_total{job="troupe-node"}`); !ok || got != 3 {
			return fmt.Errorf("the node's completed tasks: %v", got)
		}
		return nil
	})
	byJob := map[string][]string{}
	for _, s := range prom.query(`group by (__name__, job) ({__name__=~"troupe_.+"})`) {
		byJob[s.Labels["job"]] = append(byJob[s.Labels["job"]], s.Labels["__name__"])
	}
	for _, name := range byJob["troupe-node"] {
		if slices.Contains(byJob["troupe"], name) {
			t.Errorf("%s is exported by serve and by the node: a sum over jobs counts it twice", name)
		}
	}
	if len(byJob["troupe"]) == 0 || len(byJob["troupe-node"]) == 0 {
		t.Errorf("metric names by job: %v", byJob)
	}
	for _, s := range prom.query(`{__name__=~"troupe_.+"}`) {
		for k, v := range s.Labels {
			if ids[v] {
				t.Errorf("%s{%s=%q}: a run or agent ID as a label value", s.Labels["__name__"], k, v)
			}
		}
	}
	poll(t, time.Minute, func() error {
		n, _ := prom.one(`troupe_nodes{job="troupe"}`)
		free, _ := prom.one(fmt.Sprintf(`troupe_node_free_slots{job="troupe",node=%q}`, nodeID))
		if n != 1 || free != 2 {
			return fmt.Errorf("serve sees %v nodes, %v free slots of %s", n, free, nodeID)
		}
		return nil
	})

	// No node any more, two tasks queued: the queue is 2 deep.
	node.cmd.Process.Signal(os.Interrupt)
	node.wait(time.Minute)
	checkQueueDepth(t, prom, natsAt, creds(bus.RoleRequester))
	if d, ok := prom.one(`max_over_time(scrape_duration_seconds{job="troupe"}[1m])`); ok {
		avg, _ := prom.one(`avg_over_time(scrape_duration_seconds{job="troupe"}[1m])`)
		t.Logf("serve's scrapes: %.1f ms on average, %.1f ms at most over the last minute", avg*1000, d*1000)
	}
	if strings.Contains(strings.ToLower(serve.errs()), "permissions violation") {
		t.Errorf("serve logged a permissions violation:\n%s", serve.errs())
	}
}

// checkQueueDepth queues two tasks (as the requester, with no node to
// take them) and waits for Prometheus to see a queue two deep.
func checkQueueDepth(t *testing.T, prom *prometheus, natsAt, creds string) {
	t.Helper()
	req, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: natsAt, CredsFile: creds}, zerolog.Nop())
	must(t, err)
	defer req.Close()
	for range 2 {
		_, err := req.JetStream().Publish(t.Context(), bus.TaskSubject(bus.DefaultPrefix, "worker", messages.ProtocolVersion), []byte(`{}`))
		must(t, err)
	}
	poll(t, time.Minute, func() error {
		if got, _ := prom.one(`troupe_queue_depth{job="troupe"}`); got != 2 {
			return fmt.Errorf("troupe_queue_depth = %v, want 2", got)
		}
		return nil
	})
}
