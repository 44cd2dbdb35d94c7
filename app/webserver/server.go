// Package webserver serves the web view and the Prometheus metrics of a
// NATS server's events on one listener (serve --http, watch --web), behind
// the guard of internal/httpguard: loopback names only on a loopback
// listener, a token beyond it, and a cap on the page's event streams.
package webserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/httpguard"
	"github.com/troupe-ai/troupe/watch"
)

// DefaultMaxStreams is how many pages may follow the events at once (each
// is a consumer of the events stream on the NATS server).
const DefaultMaxStreams = 32

// Exposes is what the web view gives whoever reaches it, for the guard's
// refusals.
const Exposes = "read every run's tasks, tool calls and diffs"

// Options configure a Server.
type Options struct {
	// Conn is the NATS connection the events are read from.
	Conn *bus.Conn
	// Guard says where to listen and who gets in.
	Guard *httpguard.Guard
	// MaxStreams caps the pages following the events at once (0:
	// DefaultMaxStreams); the next is answered 503.
	MaxStreams int
	Log        zerolog.Logger
}

// Server is the web view and /metrics served on one listener.
type Server struct {
	Addr    net.Addr
	Metrics *watch.PromMetrics
	guard   *httpguard.Guard
	mon     *watch.Monitor
	stop    func()
}

// Close stops the listener and the metrics feed.
func (s *Server) Close() { s.stop() }

// Start serves the web view and the Prometheus metrics of o.Conn's events
// until Close. The metrics are fed by their own subscription, from the
// start of the stream.
func Start(ctx context.Context, o Options) (*Server, error) {
	ctx, cancel := context.WithCancel(ctx)
	mon := watch.StartMonitor(ctx, watch.MonitorOptions{Conn: o.Conn, Log: o.Log})
	metrics := watch.NewPromMetrics(watch.PromOptions{Stats: mon.Stats})
	es, err := o.Conn.Events(ctx, bus.WatchOptions{FromStart: true, Log: o.Log})
	if err != nil {
		cancel()
		mon.Close()
		return nil, fmt.Errorf("follow events for metrics: %w", err)
	}
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		for d := range es.C {
			metrics.Apply(d.Event)
		}
	}()
	ln, err := o.Guard.Listen()
	if err != nil {
		cancel()
		<-fed
		mon.Close()
		return nil, err
	}
	web := watch.NewWeb(watch.WebOptions{Conn: o.Conn, Metrics: metrics, Stats: mon.Stats, Log: o.Log})
	srv := &http.Server{Handler: handler(o, web.Handler()), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Log.Warn().Err(err).Msg("http server stopped")
		}
	}()
	return &Server{Addr: ln.Addr(), Metrics: metrics, guard: o.Guard, mon: mon, stop: func() {
		cancel()
		sctx, done := context.WithTimeout(context.Background(), 2*time.Second)
		defer done()
		_ = srv.Shutdown(sctx)
		_ = srv.Close()
		<-served
		<-fed
		mon.Close()
	}}, nil
}

// handler is the page's handler behind the guard, its event streams
// capped.
func handler(o Options, page http.Handler) http.Handler {
	n := o.MaxStreams
	if n <= 0 {
		n = DefaultMaxStreams
	}
	mux := http.NewServeMux()
	mux.Handle("/", page)
	mux.Handle("GET /events", httpguard.Limit(n, "live views", page))
	return o.Guard.Handler(mux)
}

// Announce tells the user where the page and the metrics are, and how to
// get in when they need the token.
func (s *Server) Announce(w io.Writer) {
	fmt.Fprintf(w, "web view at http://%s/ · metrics at http://%s/metrics\n", s.Addr, s.Addr)
	if s.guard.HasToken() {
		fmt.Fprintf(w, "  with the token of --http-token-file: a browser opens http://%s/?token=TOKEN once; Prometheus sends it as its bearer token (authorization: {credentials_file: FILE})\n", s.Addr)
	}
}

// Connect connects to serve's own NATS server (with the watcher's creds
// file, or the shared token) and serves the web view; Close closes the
// connection too.
func Connect(ctx context.Context, co bus.ConnectOptions, o Options) (*Server, error) {
	conn, err := bus.Connect(ctx, co, o.Log)
	if err != nil {
		return nil, err
	}
	o.Conn = conn
	s, err := Start(ctx, o)
	if err != nil {
		conn.Close()
		return nil, err
	}
	stop := s.stop
	s.stop = func() { stop(); conn.Close() }
	return s, nil
}
