// Command node is a troupe worker node: it takes agent tasks of its kinds
// from the NATS JetStream work queue and runs them, with the same tools,
// kinds, limits and model routing as agents that run in the orchestrator.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
