// Command orchestrator runs troupe: teams of LLM agents as actors.
package main

import (
	"context"
	"github.com/troupe-ai/troupe/internal/procsec"
	"github.com/troupe-ai/troupe/tools/sandbox"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// Started as the sandbox's launcher: confine, then exec the command.
	sandbox.MaybeRunLauncher()
	// Commands the agents run must not read our memory or environment.
	_ = procsec.NoDump()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
