package main

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
	"github.com/troupe-ai/troupe/watch"
)

// checkLoopback refuses an HTTP address beyond loopback unless public
// says the user means it (--http-public).
func checkLoopback(flag, addr string, public bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErr("%s %q: %v", flag, addr, err)
	}
	if public || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return usageErr("%s %s listens beyond loopback: the page shows every run's tasks and tool calls; add --http-public to mean it", flag, addr)
}

// webServer is the web view and /metrics served on one listener.
type webServer struct {
	Addr    net.Addr
	Metrics *watch.PromMetrics
	stop    func()
}

// Close stops the listener and the metrics feed.
func (s *webServer) Close() { s.stop() }

// startWeb serves the web view and the Prometheus metrics of conn's events
// on addr. The metrics are fed by their own subscription, from the start
// of the stream.
func startWeb(ctx context.Context, conn *bus.Conn, addr string, log zerolog.Logger) (*webServer, error) {
	ctx, cancel := context.WithCancel(ctx)
	mon := watch.StartMonitor(ctx, watch.MonitorOptions{Conn: conn, Log: log})
	metrics := watch.NewPromMetrics(watch.PromOptions{Stats: mon.Stats})
	es, err := conn.Events(ctx, bus.WatchOptions{FromStart: true, Log: log})
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
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		cancel()
		<-fed
		mon.Close()
		return nil, fmt.Errorf("listen for http: %w", err)
	}
	web := watch.NewWeb(watch.WebOptions{Conn: conn, Metrics: metrics, Stats: mon.Stats, Log: log})
	srv := &http.Server{Handler: web.Handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn().Err(err).Msg("http server stopped")
		}
	}()
	return &webServer{Addr: ln.Addr(), Metrics: metrics, stop: func() {
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

// announceWeb tells the user where the page and the metrics are.
func announceWeb(w io.Writer, s *webServer) {
	fmt.Fprintf(w, "web view at http://%s/ · metrics at http://%s/metrics\n", s.Addr, s.Addr)
}

// serveWeb connects to serve's own server and serves the web view on addr.
func serveWeb(ctx context.Context, url, token, creds, prefix, addr string, log zerolog.Logger) (*webServer, error) {
	conn, err := bus.Connect(ctx, bus.ConnectOptions{URLs: url, Token: token, CredsFile: creds, Name: "troupe serve web", Prefix: prefix}, log)
	if err != nil {
		return nil, err
	}
	web, err := startWeb(ctx, conn, addr, log)
	if err != nil {
		conn.Close()
		return nil, err
	}
	stop := web.stop
	web.stop = func() { stop(); conn.Close() }
	return web, nil
}
