package main

import (
	"strconv"
	"strings"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/app/runner"
)

// runFlags are the command line of run and resume, parsed.
type runFlags struct {
	resume     bool
	task       string // run's
	resumeRun  string // resume's RUN, "" for the latest
	workspace  string // as given; "." when not
	configFile string
	logLevel   string
	askVia     string // "", terminal or nats
	over       runner.Overrides
	json       bool
	yes        bool
	quiet      bool
}

// parseRunFlags reads run's (or resume's) arguments; a wrong one is a
// usage error saying what is wanted.
func parseRunFlags(args []string, resume bool) (runFlags, error) {
	fs := flagsOf("run")
	pos, err := fs.parse(args)
	if err != nil {
		return runFlags{}, err
	}
	f := runFlags{resume: resume, workspace: fs.values["workspace"], configFile: fs.values["config"], logLevel: fs.values["log-level"],
		askVia: fs.values["ask-via"], json: fs.bools["json"], yes: fs.bools["yes"], quiet: fs.bools["quiet"],
		over: runner.Overrides{Model: fs.values["model"], KeepCheckpoints: fs.bools["keep-checkpoints"], NATS: fs.values["nats"], Creds: fs.values["creds"],
			Ephemeral: fs.bools["ephemeral"], Placement: fs.values["placement"],
			Changes: fs.values["changes"]}}
	if f.workspace == "" {
		f.workspace = "."
	}
	switch {
	case resume && len(pos) > 1:
		return runFlags{}, usageErr("resume [RUN] [--workspace DIR]")
	case resume && len(pos) == 1:
		f.resumeRun = pos[0]
	case resume:
	case len(pos) == 0 || strings.TrimSpace(pos[0]) == "":
		return runFlags{}, usageErr(`run needs a task, in quotes: orchestrator run --workspace DIR "Find why the cache is never invalidated and fix it"`)
	case len(pos) > 1:
		return runFlags{}, usageErr("run takes one task; put it in quotes (got %d words: %q ...)", len(pos), pos[0])
	default:
		f.task = pos[0]
	}
	if v := fs.values["max-rounds"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return runFlags{}, usageErr("--max-rounds: want a positive number, got %q", v)
		}
		f.over.MaxRounds = n
	}
	if v := f.askVia; v != "" && v != "terminal" && v != "nats" {
		return runFlags{}, usageErr("--ask-via: want terminal or nats, got %q", v)
	}
	return f, nil
}

// checkpoint is the checkpoint resume goes on from (nil for run); --model
// switches its model, which it keeps otherwise.
func (f runFlags) checkpoint() (*actors.Checkpoint, error) {
	if !f.resume {
		return nil, nil
	}
	state, err := runner.StateDir(f.workspace)
	if err != nil {
		return nil, err
	}
	cp, err := actors.FindCheckpoint(state, f.resumeRun)
	if err != nil {
		return nil, resumeErr(err, f.resumeRun, f.workspace)
	}
	if m := f.over.Model; m != "" {
		cp.Model = m
	}
	return cp, nil
}
