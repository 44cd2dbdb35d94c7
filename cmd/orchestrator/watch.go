package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/console"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/app/setup"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/cluster"
)

// cmdWatch follows a swarm's events on NATS: the live agent tree on a
// terminal, or one JSON envelope per line when piped or with --json.
func cmdWatch(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	fs := flagsOf("watch")
	pos, err := fs.parse(args)
	if err != nil {
		return exitUsage, err
	}
	if len(pos) > 0 {
		return exitUsage, usageErr("watch takes no arguments (did you mean --run %s?)", pos[0])
	}
	cfg, err := config.Load(config.Sources{File: fs.values["config"], Getenv: getenv})
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	url, setting := watchURL(cfg.NATS.URL, fs.values["nats"])
	guard, err := webGuard(fs, "web")
	if err != nil {
		return exitUsage, err
	}
	if v := fs.values["creds"]; v != "" {
		cfg.NATS.Creds = v
	}
	log := zerolog.New(setup.Redactor(cfg).Writer(stderr)).Level(zerolog.WarnLevel)
	conn, err := runner.Connect(ctx, cfg.NATS, url, setting, "troupe watch", log)
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	defer conn.Close()
	stopWeb, err := watchWeb(ctx, conn, guard, log, stderr)
	if err != nil {
		return exitFailed, err
	}
	defer stopWeb()
	fs.bools["follow"] = fs.bools["follow"] || guard != nil // the page outlives any one run
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	run := fs.values["run"]
	if run != "" {
		if run, err = conn.FindRun(ctx, run); err != nil {
			return exitUsage, usageErr("--run: %v", err)
		}
	}
	term := console.TerminalOf(stdout, getenv)
	es, leases, err := watchEvents(ctx, conn, run, fs, term, log, stderr)
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	w := console.NewWatcher(es, run, fs.bools, term.View(stdout), json.NewEncoder(stdout))
	w.JSON = w.JSON || !term.TTY
	w.Leases, w.Stderr, w.Resume = leases, stderr, runner.ResumeLines(url, cfg.NATS.Creds)
	if fs.bools["interactive"] {
		ans, err := conn.Answer(run, log)
		if err != nil {
			return exitFailed, err
		}
		defer ans.Stop()
		go console.AnswerQuestions(ctx, ans, stdin, stderr, w.View)
	}
	fmt.Fprintf(stderr, "watching %s on %s (Ctrl-C to stop)\n", orAll(run), url)
	return loopExit(w.Loop(ctx))
}

// loopExit is the exit code of a watch that ended: interrupted (130),
// failed, or done.
func loopExit(interrupted bool, err error) (int, error) {
	switch {
	case err != nil:
		return exitFailed, err
	case interrupted:
		return exitInterrupt, nil
	}
	return exitOK, nil
}

// watchURL is the server watch connects to, and the setting that named it.
func watchURL(configured, flag string) (url, setting string) {
	switch {
	case flag != "":
		return flag, "--nats"
	case configured != "":
		return configured, "TROUPE_NATS_URL"
	}
	return "nats://127.0.0.1:4222", "--nats (default nats://127.0.0.1:4222)"
}

// watchEvents subscribes to the events watch shows (run's, or every
// run's with ""), the stored ones first with --from-start, or when the
// run watched has finished or is lost (said on stderr), and the run
// leases it judged that by (watchLeases). On a terminal the tree
// counts the messages the stream refuses: a warning line for each would
// scroll over it.
func watchEvents(ctx context.Context, conn *bus.Conn, run string, fs *flagSet, term console.Terminal, log zerolog.Logger,
	stderr io.Writer) (*bus.EventStream, *cluster.RunLeases, error) {
	leases := watchLeases(ctx, conn, log)
	console.ShowEnded(ctx, conn, leases, run, fs.bools, stderr)
	if term.TTY && !fs.bools["json"] {
		log = log.Level(zerolog.ErrorLevel)
	}
	es, err := conn.Events(ctx, bus.WatchOptions{Run: run, FromStart: fs.bools["from-start"], Log: log})
	return es, leases, err
}

// watchLeases follows the run leases, so that a run whose orchestrator
// died shows lost (nil, with a warning, when they cannot be read).
func watchLeases(ctx context.Context, conn *bus.Conn, log zerolog.Logger) *cluster.RunLeases {
	leases, err := cluster.WatchRunLeases(ctx, conn)
	if err != nil {
		log.Warn().Err(err).Msg("run leases unreadable: a run whose orchestrator died shows running")
	}
	return leases
}

func orAll(run string) string {
	if run == "" {
		return "every run"
	}
	return "run " + run
}
