package main

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/mcpserver"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/app/setup"
	"github.com/troupe-ai/troupe/internal/httpguard"
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
	var guard *httpguard.Guard
	if addr := fs.values["http"]; addr != "" {
		guard, err = httpguard.New(httpguard.Options{Addr: addr, Public: fs.bools["http-public"], TokenFile: fs.values["http-token-file"],
			AlwaysToken: true, NoAuth: fs.bools["no-auth"], Exposes: mcpserver.Exposes})
		if err != nil {
			return exitUsage, usageErr("%v", err)
		}
	} else if fs.values["http-token-file"] != "" || fs.bools["no-auth"] || fs.bools["http-public"] {
		return exitUsage, usageErr("--http-token-file, --no-auth and --http-public go with --http ADDR")
	}
	ws := fs.values["workspace"]
	if ws == "" {
		ws = "."
	}
	cfg, err := runner.LoadConfig(config.Sources{File: fs.values["config"], Home: env.home, Workspace: runner.Abs(ws), Getenv: env.getenv},
		runner.Overrides{Model: fs.values["model"], NATS: fs.values["nats"], Creds: fs.values["creds"]})
	if err != nil {
		return exitUsage, err
	}
	log := zerolog.New(setup.Redactor(cfg).Writer(stderr)).Level(zerolog.WarnLevel)
	tp, stopTracing, err := setup.Tracing(ctx, cfg.Telemetry.OTLPEndpoint, telemetry.ServiceOrchestrator, env.getenv, log)
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	defer stopTracing() // last: the runs have ended
	setting := runner.Overrides{NATS: fs.values["nats"]}.NATSSetting(env.getenv)
	nb, err := runner.StartBus(ctx, cfg.NATS, setup.StreamLimits(cfg), setting, runner.Abs(ws), log)
	if err != nil {
		return exitUsage, err
	}
	defer nb.Close(context.Background())
	srv := mcpserver.New(ctx, mcpserver.Options{Config: cfg, Workspace: ws, Bus: nb, Tracer: tp.Tracer(), Version: versionLine("orchestrator"), Log: log})
	defer srv.Close() // before the bus closes: the runs end first
	fmt.Fprintf(stderr, "troupe MCP server: runs in %s, events on %s\n", runner.Abs(ws), nb.URL())
	if guard == nil {
		if err := srv.ServeStdio(ctx, stdin, stdout); err != nil {
			return exitFailed, err
		}
		return exitOK, nil
	}
	err = srv.ServeHTTP(ctx, guard, func(a net.Addr) {
		fmt.Fprintf(stderr, "MCP over streamable HTTP at http://%s/mcp\n", a)
		if guard.HasToken() {
			fmt.Fprintln(stderr, "  clients send the token of --http-token-file: Authorization: Bearer TOKEN")
		}
	})
	if err != nil {
		return exitFailed, err
	}
	return exitOK, nil
}
