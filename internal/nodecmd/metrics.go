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
	"github.com/troupe-ai/troupe/internal/httpguard"
	"github.com/troupe-ai/troupe/watch"
)

// nodeMetrics are a node's Prometheus metrics, fed by its own events.
type nodeMetrics struct {
	*watch.PromMetrics
	addr net.Addr
}

// metricsExposes is what a node's /metrics gives whoever reaches it.
const metricsExposes = "read this node's metrics (its runs' kinds, models and tokens)"

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
	srv := &http.Server{Handler: g.Handler(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn().Err(err).Msg("metrics server stopped")
		}
	}()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return m, nil
}

// withMetrics is the node's emitter: pub, and with --http the metrics it
// serves too.
func withMetrics(ctx context.Context, g *httpguard.Guard, pub actors.Emitter, log zerolog.Logger, stderr io.Writer) (actors.Emitter, error) {
	if g == nil {
		return pub, nil
	}
	m, err := serveMetrics(ctx, g, log)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "metrics at http://%s/metrics\n", m.addr)
	return actors.Emitters{pub, actors.EmitterFunc(m.Apply)}, nil
}
