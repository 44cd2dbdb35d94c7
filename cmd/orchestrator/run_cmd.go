package main

import (
	"context"
	"fmt"
	"github.com/troupe-ai/troupe/app/console"
	"io"
	"os"

	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/app/setup"
	"github.com/troupe-ai/troupe/telemetry"
)

// runEnv is what run needs from the process, injectable for tests.
type runEnv struct {
	getenv      func(string) string
	home        string
	stdin       io.Reader
	interactive bool // stdin is a terminal: ask for approvals there
}

func processEnv(stdin io.Reader) runEnv {
	home, _ := os.UserHomeDir()
	// Approvals are asked on stdin only when it is a terminal: with
	// </dev/null, a pipe or a file, a run is headless and "ask" is a no at
	// once.
	interactive := false
	if f, ok := stdin.(*os.File); ok {
		interactive = console.IsTerminal(f)
	}
	return runEnv{getenv: os.Getenv, home: home, stdin: stdin, interactive: interactive}
}

// cmdRun runs a task (or, with resume, goes on with a checkpointed run):
// flags → configuration → a run built by app/runner → the outcome
// and its exit code.
func cmdRun(ctx context.Context, args []string, env runEnv, stdout, stderr io.Writer, resume bool) (int, error) {
	f, err := parseRunFlags(args, resume)
	if err != nil {
		return exitUsage, err
	}
	if err := runner.MigrateState(f.workspace, stderr); err != nil {
		return exitUsage, err
	}
	cp, err := f.checkpoint()
	if err != nil {
		return exitUsage, err
	}
	cfg, err := runner.LoadConfig(config.Sources{File: f.configFile, Home: env.home, Workspace: runner.Abs(f.workspace), Getenv: env.getenv}, f.over)
	if err != nil {
		return exitUsage, err
	}
	if cp != nil {
		fmt.Fprintf(stderr, "resuming run %s from %s (round %d, model %s)\n", cp.Run, cp.Path, cp.Round, cp.Model)
	}
	log, err := runner.Logger(cfg, f.logLevel, stderr)
	if err != nil {
		return exitUsage, err
	}
	// Spans that cannot be exported are one warning line, even without --log-level.
	tlog := log
	if f.logLevel == "" {
		tlog, _ = runner.Logger(cfg, "warn", stderr)
	}
	tp, stopTracing, err := setup.Tracing(ctx, cfg.Telemetry.OTLPEndpoint, telemetry.ServiceOrchestrator, env.getenv, tlog)
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	defer stopTracing() // after the run has ended: its spans are queued
	ui := console.NewRunUI(f.quiet, stderr, env.getenv)
	defer ui.Close()
	r, err := runner.Prepare(ctx, runner.Spec{Config: cfg, NATSSetting: f.over.NATSSetting(env.getenv), Workspace: f.workspace,
		Task: f.task, Resume: cp, Sinks: ui.Sinks, Log: log, Tracer: tp.Tracer()})
	if err != nil {
		return exitUsage, err
	}
	defer r.Close()
	r.Bus().Announce(stderr, r.ID())
	ui.Start()
	r.Options.Approver = f.approver(env, r.Bus().Conn(), ui, stderr, log)
	res, err := r.Execute(ctx)
	ui.Close()
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	if err := console.ReportRun(stdout, stderr, f.json, res, r); err != nil {
		return exitFailed, err
	}
	return runExit(ctx.Err() != nil, stderr, res, cfg.Agent.RoundLimit(), f.workspace, r.ResumeCommand(f.workspace, f.configFile)), nil
}
