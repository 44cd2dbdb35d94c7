package nodecmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/cluster"
	"github.com/troupe-ai/troupe/internal/httpguard"
)

// nodeMetrics are a node's own Prometheus metrics: its process's health
// and what it did with the tasks it got. Nothing here is counted from
// events: the swarm's figures (tokens, agents, tool calls, nodes, the
// queue) are serve's and watch --web's, counted once from the events
// stream, so no series of a node's /metrics is also in theirs and a sum
// over every job counts each thing once (docs/metrics.md).
type nodeMetrics struct {
	reg  *prometheus.Registry
	addr net.Addr
}

// metricsExposes is what a node's /metrics gives whoever reaches it.
const metricsExposes = "read this node's metrics (its tasks and its process's health)"

// metricsGuard is the guard of --http (nil without it); a refusal is a
// usage error.
func metricsGuard(o options) (*httpguard.Guard, error) {
	if o.http == "" {
		if o.httpPublic || o.httpTokenFile != "" {
			return nil, usageError{errors.New("--http-public and --http-token-file go with --http ADDR")}
		}
		return nil, nil
	}
	g, err := httpguard.New(httpguard.Options{Addr: o.http, Public: o.httpPublic, TokenFile: o.httpTokenFile, Exposes: metricsExposes})
	if err != nil {
		return nil, usageError{err}
	}
	return g, nil
}

// serveMetrics serves a node's metrics at /metrics on g's listener until
// ctx ends.
func serveMetrics(ctx context.Context, g *httpguard.Guard, log zerolog.Logger) (*nodeMetrics, error) {
	ln, err := g.Listen()
	if err != nil {
		return nil, err
	}
	m := &nodeMetrics{reg: prometheus.NewRegistry(), addr: ln.Addr()}
	// The process's own health: goroutines, heap (go_gc_heap_live_bytes:
	// live after the last collection), resident memory, open files (go_*,
	// process_*), so a node that serves for weeks can be seen to stay its
	// size.
	liveHeap := collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)}
	m.reg.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(liveHeap)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: g.Handler(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn().Err(err).Msg("metrics server stopped")
		}
	}()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return m, nil
}

// startMetrics serves the node's metrics behind g (--http), and says
// where; without --http (g nil) it returns nil.
func startMetrics(ctx context.Context, g *httpguard.Guard, log zerolog.Logger, stderr io.Writer) (*nodeMetrics, error) {
	if g == nil {
		return nil, nil
	}
	m, err := serveMetrics(ctx, g, log)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "metrics at http://%s/metrics\n", m.addr)
	return m, nil
}

// follow adds node's figures to the metrics (nil: no --http).
func (m *nodeMetrics) follow(node *cluster.Node, name, version string) {
	if m == nil {
		return
	}
	if name == "" {
		name, _ = os.Hostname()
	}
	m.reg.MustRegister(&nodeCollector{node: node, d: newNodeDescs(), info: prometheus.MustNewConstMetric(
		prometheus.NewDesc("troupe_node_info", "This node: its ID, name and version (always 1).", []string{"node", "name", "version"}, nil),
		prometheus.GaugeValue, 1, node.ID(), name, version)})
}

// nodeDescs are the descriptions of the node's task counters, made when
// a node registers its metrics (not at package init: every command links
// this package).
type nodeDescs struct{ taken, completed, refused, stopped *prometheus.Desc }

func newNodeDescs() nodeDescs {
	return nodeDescs{
		taken:     prometheus.NewDesc("troupe_node_tasks_taken_total", "Tasks this node started.", nil, nil),
		completed: prometheus.NewDesc("troupe_node_tasks_completed_total", "Tasks whose result this node published and acknowledged.", nil, nil),
		refused: prometheus.NewDesc("troupe_node_tasks_refused_total",
			"Task messages this node refused, by reason (malformed, wrong_kind, version, workspace).", []string{"reason"}, nil),
		stopped: prometheus.NewDesc("troupe_node_tasks_stopped_total",
			"Tasks this node stopped or never started without a result of its own, by reason (handed_back, cancelled, revoked, lapsed).", []string{"reason"}, nil),
	}
}

// nodeCollector reads the node's counters at each scrape.
type nodeCollector struct {
	node *cluster.Node
	info prometheus.Metric
	d    nodeDescs
}

// Describe sends the descriptions of the node's metrics.
func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.info.Desc()
	for _, d := range []*prometheus.Desc{c.d.taken, c.d.completed, c.d.refused, c.d.stopped} {
		ch <- d
	}
}

// Collect sends the node's counters as they are now.
func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.node.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	ch <- c.info
	counter(c.d.taken, s.Taken)
	counter(c.d.completed, s.Completed)
	counter(c.d.refused, s.Malformed, "malformed")
	counter(c.d.refused, s.WrongKind, "wrong_kind")
	counter(c.d.refused, s.Version, "version")
	counter(c.d.refused, s.Workspace, "workspace")
	counter(c.d.stopped, s.HandedBack, "handed_back")
	counter(c.d.stopped, s.Cancelled, "cancelled")
	counter(c.d.stopped, s.Revoked, "revoked")
	counter(c.d.stopped, s.Lapsed, "lapsed")
}
