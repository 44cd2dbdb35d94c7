package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/config"
	"github.com/troupe-ai/troupe/internal/setup"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/watch"
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
		interactive = isTerminal(f)
	}
	return runEnv{getenv: os.Getenv, home: home, stdin: stdin, interactive: interactive}
}

func cmdRun(ctx context.Context, args []string, env runEnv, stdout, stderr io.Writer, resume bool) (int, error) {
	fs := flagsOf("run")
	pos, err := fs.parse(args)
	if err != nil {
		return exitUsage, err
	}
	ws := fs.values["workspace"]
	if ws == "" {
		ws = "."
	}
	var task string
	var cp *actors.Checkpoint
	if resume {
		if len(pos) > 1 {
			return exitUsage, usageErr("resume [RUN] [--workspace DIR]")
		}
		run := ""
		if len(pos) == 1 {
			run = pos[0]
		}
		c, err := actors.FindCheckpoint(actors.DataDir(absOr(ws)), run)
		if err != nil {
			return exitUsage, usageErr("resume: %v", err)
		}
		cp = c
	} else {
		if len(pos) == 0 || strings.TrimSpace(pos[0]) == "" {
			return exitUsage, usageErr(`run needs a task, in quotes: orchestrator run --workspace DIR "Find why the cache is never invalidated and fix it"`)
		}
		if len(pos) > 1 {
			return exitUsage, usageErr("run takes one task; put it in quotes (got %d words: %q ...)", len(pos), pos[0])
		}
		task = pos[0]
	}
	cfg, err := config.Load(config.Sources{File: fs.values["config"], Home: env.home, Workspace: absOr(ws), Getenv: env.getenv})
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	if m := fs.values["model"]; m != "" {
		cfg.Model.Default = m
		cfg.SetByFlag("model.default", "--model")
		if cp != nil {
			cp.Model = m // resume --model switches; without it the run keeps its model
		}
	}
	if cp != nil {
		fmt.Fprintf(stderr, "resuming run %s from %s (round %d, model %s)\n", cp.Run, cp.Path, cp.Round, cp.Model)
	}
	if v := fs.values["max-rounds"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return exitUsage, usageErr("--max-rounds: want a positive number, got %q", v)
		}
		cfg.Agent.MaxRounds = n
		cfg.SetByFlag("agent.max_rounds", "--max-rounds")
	}
	if fs.bools["keep-checkpoints"] {
		cfg.Agent.KeepCheckpoints = true
		cfg.SetByFlag("agent.keep_checkpoints", "--keep-checkpoints")
	}
	natsSetting := "nats.url"
	switch {
	case fs.values["nats"] != "":
		cfg.NATS.URL, natsSetting = fs.values["nats"], "--nats"
		cfg.SetByFlag("nats.url", "--nats")
	case env.getenv("TROUPE_NATS_URL") != "":
		natsSetting = "TROUPE_NATS_URL"
	}
	if v := fs.values["creds"]; v != "" {
		cfg.NATS.Creds = v
		cfg.SetByFlag("nats.creds", "--creds")
	}
	if fs.bools["ephemeral"] {
		cfg.NATS.Ephemeral = true
		cfg.SetByFlag("nats.ephemeral", "--ephemeral")
	}
	if v := fs.values["placement"]; v != "" {
		if cfg.Placement, err = parsePlacement(v, cfg.Placement); err != nil {
			return exitUsage, usageErr("--placement: %v", err)
		}
		for _, part := range strings.Split(v, ",") {
			kind, _, _ := strings.Cut(strings.TrimSpace(part), "=")
			cfg.SetByFlag("placement."+kind, "--placement")
		}
	}
	if err := cfg.Validate(); err != nil {
		return exitUsage, usageErr("config: %v", err)
	}
	log := zerolog.Nop()
	if lvl := fs.values["log-level"]; lvl != "" {
		l, err := zerolog.ParseLevel(lvl)
		if err != nil {
			return exitUsage, usageErr("--log-level: %v", err)
		}
		out := setup.Redactor(cfg).Writer(stderr) // no configured secret in a log line
		log = zerolog.New(zerolog.ConsoleWriter{Out: out, TimeFormat: time.TimeOnly, NoColor: true}).Level(l).With().Timestamp().Logger()
	}
	opts, err := setup.TeamOptions(cfg, ws, log)
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	defer setup.CloseToolSources(opts.ToolSources) // MCP servers end with the run
	opts.Task, opts.Resume = task, cp
	if cp != nil {
		opts.Run = cp.Run
	} else {
		opts.Run = uuid.NewString()
	}
	nb, err := startBus(ctx, cfg.NATS, setup.StreamLimits(cfg), natsSetting, absOr(ws), log)
	if err != nil {
		return exitUsage, err
	}
	defer nb.close(ctx)
	nb.announce(stderr, opts.Run)
	var live *liveView
	prices := &pricingWatch{}
	// The metrics come from the run's events on the bus, so remote agents'
	// count too.
	metrics := watch.NewMetricsCollector()
	var followed chan struct{}
	if fs.bools["quiet"] {
		opts.Events = actors.Emitters{&progressLine{w: stderr}, actors.LogEmitter{Log: log}, nb.pub, prices}
		if followed, err = followRun(ctx, nb, opts.Run, metrics.Apply); err != nil {
			return exitFailed, err
		}
	} else {
		live = newLiveView(stderr, env.getenv)
		if err := live.follow(ctx, nb, opts.Run, metrics.Apply); err != nil {
			return exitFailed, err
		}
		followed = live.fin
		opts.Events = actors.Emitters{actors.LogEmitter{Log: log}, nb.pub, prices}
	}
	opts.EventsDropped = nb.dropped
	opts.Artifacts = nb.conn.Artifacts(opts.Run)
	remote, err := startPlacement(ctx, nb, cfg, opts.Run, opts.Workspace, opts.Events, log)
	if err != nil {
		return exitUsage, usageErr("%v", err)
	} else if remote != nil {
		defer remote.Close()
		opts.Placer, opts.OnBudget = remote.Placer(), remote.ServeBudget
	}
	switch via := fs.values["ask-via"]; {
	case fs.bools["yes"]:
		opts.Approver = yesApprover{}
	case via == "nats":
		opts.Approver = nb.conn.NewApprover(log) // watch --interactive answers; nobody answering is a no
	case via != "" && via != "terminal":
		return exitUsage, usageErr("--ask-via: want terminal or nats, got %q", via)
	case env.interactive:
		ta := pausingApprover{inner: &actors.TerminalApprover{In: env.stdin, Out: stderr}}
		if live != nil && live.tty {
			ta.view = live.view
		}
		opts.Approver = ta
	}
	res, err := actors.Run(ctx, opts)
	waitFor(followed, 5*time.Second)
	if live != nil {
		live.Close()
	}
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	interrupted := ctx.Err() != nil
	if fs.bools["json"] {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		out := struct {
			actors.Result
			Metrics watch.Metrics  `json:"metrics"`
			Refused *refusedCounts `json:"refused,omitempty"`
		}{res, metrics.Metrics(), refusedOf(remote)}
		if err := enc.Encode(out); err != nil {
			return exitFailed, err
		}
	} else {
		printText(stdout, res.Text)
		cost := watch.Dollars(res.Cost)
		if res.Budget != nil {
			cost = watch.Dollars(res.Budget.Used.CostUSD)
		}
		unpriced := prices.models()
		if len(unpriced) > 0 {
			cost = "cost unknown"
		}
		fmt.Fprintf(stderr, "%s · %d in / %d out tokens · %s · %s\n", endWords(res.Status, res.Reason, res.Rounds),
			res.Usage.PromptTokens, res.Usage.CompletionTokens, cost, res.Wall.Round(time.Millisecond))
		printRunSummary(stderr, res.Budget, unpriced...)
		printMetrics(stderr, metrics.Metrics())
		printRefused(stderr, refusedOf(remote))
		if res.EventsDropped > 0 {
			fmt.Fprintf(stderr, "events: %d could not be published (NATS was unreachable or refused them and the buffers were full)\n", res.EventsDropped)
		}
	}
	switch {
	case interrupted:
		if _, err := actors.FindCheckpoint(actors.DataDir(absOr(ws)), res.Run); err != nil {
			fmt.Fprintf(stderr, "interrupted before the first checkpoint (written when the first tool call starts); nothing to resume: run the task again\n")
			return exitInterrupt, nil
		}
		fmt.Fprintf(stderr, "interrupted; the run is checkpointed. Resume with:\n  orchestrator resume %s --workspace %s\n", res.Run, ws)
		return exitInterrupt, nil
	case res.Status == actors.StatusFailed:
		if res.Err != "" {
			fmt.Fprintf(stderr, "agent failed: %s\n", watch.Printable(res.Err))
		}
		return exitFailed, nil
	case res.Reason == actors.ReasonRoundLimit || res.Reason == actors.ReasonBudgetExhausted:
		fmt.Fprintln(stderr, limitWords(res.Reason, cfg.Agent.RoundLimit(), res.Run, ws))
		return exitLimit, nil
	case res.Status == actors.StatusCancelled:
		return exitInterrupt, nil
	}
	return exitOK, nil
}

func absOr(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// yesApprover approves everything (--yes).
type yesApprover struct{}

func (yesApprover) Approve(context.Context, actors.ApprovalRequest) (bool, error) { return true, nil }

// progressLine prints one compact line per root round on stderr.
type progressLine struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *progressLine) Emit(ev messages.Event) {
	switch ev.Type {
	case messages.EvtAgentSpawned:
		d, err := messages.DecodeAs[messages.AgentSpawned](ev)
		if err != nil {
			return
		}
		where := ""
		if d.Placement == "remote" {
			where = " (remote)"
		}
		p.mu.Lock()
		fmt.Fprintf(p.w, "  + %s agent %s on %s%s\n", watch.Printable(d.Kind), watch.Printable(d.Child), watch.Printable(d.Model), where)
		p.mu.Unlock()
	case messages.EvtLLMResponse:
		if ev.Agent != actors.RootAgentID {
			return
		}
		d, err := messages.DecodeAs[messages.LLMResponse](ev)
		if err != nil {
			return
		}
		tools := "answer"
		if len(d.ToolCalls) > 0 {
			tools = watch.SummarizeCalls(d.ToolCalls)
		}
		cost := watch.Dollars(d.TotalCostUSD)
		if !d.CostKnown {
			cost = "cost unknown"
		}
		p.mu.Lock()
		fmt.Fprintf(p.w, "round %d · %s · %d tokens · %s\n", d.Round, tools, d.TotalTokens, cost)
		p.mu.Unlock()
	}
}
