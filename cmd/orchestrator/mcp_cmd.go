package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/config"
	"github.com/troupe-ai/troupe/internal/runner"
	"github.com/troupe-ai/troupe/internal/setup"
	"github.com/troupe-ai/troupe/telemetry"
)

// cmdMCP serves troupe as an MCP server: on stdin/stdout, or with --http
// over streamable HTTP, until interrupted (or stdin ends).
func cmdMCP(ctx context.Context, args []string, env runEnv, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	fs := flagsOf("mcp")
	pos, err := fs.parse(args)
	if err != nil {
		return exitUsage, err
	}
	if len(pos) > 0 {
		return exitUsage, usageErr("mcp takes no arguments")
	}
	addr := fs.values["http"]
	if addr != "" {
		if err := checkLoopback("--http", addr, fs.bools["http-public"]); err != nil {
			return exitUsage, err
		}
	}
	ws := fs.values["workspace"]
	if ws == "" {
		ws = "."
	}
	cfg, err := config.Load(config.Sources{File: fs.values["config"], Home: env.home, Workspace: runner.Abs(ws), Getenv: env.getenv, Kinds: actors.BuiltinKinds()})
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	if m := fs.values["model"]; m != "" {
		cfg.Model.Default = m
		cfg.SetByFlag("model.default", "--model")
	}
	if v := fs.values["nats"]; v != "" {
		cfg.NATS.URL = v
		cfg.SetByFlag("nats.url", "--nats")
	}
	if err := cfg.Validate(); err != nil {
		return exitUsage, usageErr("config: %v", err)
	}
	log := zerolog.New(setup.Redactor(cfg).Writer(stderr)).Level(zerolog.WarnLevel)
	tp, stopTracing, err := setup.Tracing(ctx, cfg.Telemetry.OTLPEndpoint, telemetry.ServiceOrchestrator, env.getenv, log)
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	defer stopTracing() // last: the runs have ended
	nb, err := runner.StartBus(ctx, cfg.NATS, setup.StreamLimits(cfg), "nats.url", runner.Abs(ws), log)
	if err != nil {
		return exitUsage, err
	}
	defer nb.Close(context.Background())
	ctx, cancel := context.WithCancel(ctx)
	s := &mcpServer{ctx: ctx, cfg: cfg, ws: ws, nb: nb, log: log, runs: map[string]*mcpRun{}, tracer: tp.Tracer()}
	defer s.wg.Wait() // the runs, cancelled below, end first
	defer cancel()
	srv := newMCPServer(s)
	fmt.Fprintf(stderr, "troupe MCP server: runs in %s, events on %s\n", runner.Abs(ws), nb.URL())
	if addr == "" {
		err := srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			return exitFailed, err
		}
		return exitOK, nil
	}
	return serveMCPHTTP(ctx, srv, addr, stderr)
}

// serveMCPHTTP serves srv over streamable HTTP at addr/mcp until ctx ends.
func serveMCPHTTP(ctx context.Context, srv *mcp.Server, addr string, stderr io.Writer) (int, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return exitUsage, usageErr("--http: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "MCP over streamable HTTP at http://%s/mcp\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return exitFailed, err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	return exitOK, nil
}

// nopWriteCloser leaves stdout open when the transport closes.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
