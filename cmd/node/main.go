// Command node is a troupe worker node: it takes agent tasks of its kinds
// from the NATS JetStream work queue and runs them, with the same tools,
// kinds, limits and model routing as agents that run in the orchestrator.
// `orchestrator node` is the same program.
package main

import (
	"context"
	"github.com/troupe-ai/troupe/internal/procsec"
	"github.com/troupe-ai/troupe/tools/sandbox"
	"os"
	"os/signal"
	"syscall"

	"github.com/troupe-ai/troupe/app/nodecmd"
)

func main() {
	// Started as the sandbox's launcher: confine, then exec the command.
	sandbox.MaybeRunLauncher()
	// Commands the agents run must not read our memory or environment.
	_ = procsec.NoDump()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := nodecmd.Run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
