package nodecmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/watch"
)

// nodeMetrics are a node's Prometheus metrics, fed by its own events.
type nodeMetrics struct {
	*watch.PromMetrics
	addr net.Addr
}

// serveMetrics serves a node's metrics at addr/metrics until ctx ends.
// An address beyond loopback needs public (--http-public).
func serveMetrics(ctx context.Context, addr string, public bool, log zerolog.Logger) (*nodeMetrics, error) {
	if err := checkLoopback(addr, public); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for --http: %w", err)
	}
	m := &nodeMetrics{PromMetrics: watch.NewPromMetrics(watch.PromOptions{}), addr: ln.Addr()}
	// The process's own health beside its events' metrics: goroutines,
	// heap (go_gc_heap_live_bytes: live after the last collection),
	// resident memory, open files (go_*, process_*), so a node that serves
	// for weeks can be seen to stay its size.
	liveHeap := collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)}
	m.Registry().MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(liveHeap)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn().Err(err).Msg("metrics server stopped")
		}
	}()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return m, nil
}

// checkLoopback refuses an --http address beyond loopback unless public.
func checkLoopback(addr string, public bool) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageError{fmt.Errorf("--http %q: %w", addr, err)}
	}
	if ip := net.ParseIP(host); !public && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usageError{fmt.Errorf("--http %s listens beyond loopback; add --http-public to mean it", addr)}
	}
	return nil
}

// withMetrics is the node's in-process emitter: with --http the metrics
// it serves, else none.
func withMetrics(ctx context.Context, o options, log zerolog.Logger, stderr io.Writer) (actors.Emitter, error) {
	if o.http == "" {
		return nil, nil
	}
	m, err := serveMetrics(ctx, o.http, o.httpPublic, log)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "metrics at http://%s/metrics\n", m.addr)
	return actors.EmitterFunc(m.Apply), nil
}
