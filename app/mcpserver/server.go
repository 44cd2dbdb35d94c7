// Package mcpserver is troupe as an MCP server (orchestrator mcp): the
// tools start_run, explore, check_run and cancel_run, each call its own run
// of one workspace, served over stdio (ServeStdio) or streamable HTTP
// (ServeHTTP, behind internal/httpguard).
//
// A call that waits for its run (wait: true) sends notifications/progress
// every few seconds when the client gave a progress token (the run's ID,
// its agents, tokens and latest finding), and cancels the run when the
// client cancels the call; a run started without wait returns its ID at
// once and runs until cancel_run or the server stops. Arguments are
// checked before any model call (-32602 naming the argument), a line on
// stdin that is not JSON-RPC is answered with -32700 or -32600 and the
// server carries on, start_run's budget is clamped to the configured one,
// at most mcp.max_runs runs go at once and the mcp.keep_runs most recent
// finished runs are remembered.
package mcpserver

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/cluster"
	"github.com/troupe-ai/troupe/telemetry"
)

// Options configure a Server.
type Options struct {
	// Config is the validated configuration every run starts from.
	Config config.Config
	// Workspace is the directory the runs work in.
	Workspace string
	// Bus is the NATS the runs' events go to.
	Bus *runner.Bus
	// Tracer makes each run's agents spans (zero: tracing is off).
	Tracer telemetry.Tracer
	// Version is the server's version, as initialize reports it.
	Version string
	Log     zerolog.Logger
}

// Server is troupe's MCP server: its tools and the runs they started.
type Server struct {
	o      Options
	ctx    context.Context // the server's life: runs end with it
	cancel context.CancelFunc
	mcp    *mcp.Server
	runs   *registry
	wg     sync.WaitGroup
	// rates is the server's part in its hub's provider rate limits: every
	// run's model calls take their turns there (nil: none could be had).
	rates *cluster.RateHub
}

// New is the server of o; its runs live until Close or ctx ends.
func New(ctx context.Context, o Options) *Server {
	ctx, cancel := context.WithCancel(ctx)
	s := &Server{o: o, ctx: ctx, cancel: cancel, runs: newRegistry(o.Config.MCP.MaxRuns, o.Config.MCP.KeepRuns)}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "troupe", Version: o.Version}, nil)
	s.addTools()
	if o.Bus != nil {
		rates, err := cluster.StartRateHub(ctx, o.Bus.Conn(), cluster.RateHubOptions{Candidate: true, Name: "mcp", Log: o.Log})
		if err != nil {
			o.Log.Warn().Err(err).Msg("the runs' model calls will not wait for the hub's provider rate limits")
		} else {
			s.rates = rates
		}
	}
	return s
}

// Close cancels every run and waits for them to end.
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
	if s.rates != nil {
		s.rates.Close()
	}
}
