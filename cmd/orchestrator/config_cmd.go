package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/runner"
)

// cmdConfig prints the effective configuration with the origin of every
// value (the compiled-in default, a file and line, the environment or a
// flag) and what a workspace's own config file may do with it. An invalid configuration is printed all the same, then refused
// with the error run would give (exit 2).
func cmdConfig(args []string, getenv func(string) string, stdout io.Writer) (int, error) {
	fs, err := parseSubcommand(args, "config", "print")
	if err != nil {
		return exitUsage, err
	}
	cfg, err := workspaceConfig(fs, getenv)
	if err != nil {
		return exitUsage, err
	}
	if err := (runner.Overrides{Model: fs.values["model"], NATS: fs.values["nats"]}).Apply(&cfg); err != nil {
		return exitUsage, err
	}
	settings, err := cfg.Settings()
	if err != nil {
		return exitFailed, err
	}
	if fs.bools["json"] {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(settings); err != nil {
			return exitFailed, err
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		for _, s := range settings {
			fmt.Fprintf(tw, "%s: %s\t# %s\t· workspace file: %s\n", s.Key, s.Value, s.Origin, s.Workspace)
		}
		if err := tw.Flush(); err != nil {
			return exitFailed, err
		}
	}
	// Printed, and refused as run would refuse it: exit 2.
	if err := cfg.Validate(); err != nil {
		return exitUsage, usageErr("config: %v", err)
	}
	return exitOK, nil
}

// parseSubcommand parses the flags of `orchestrator cmd sub` from args
// (what follows cmd), refusing another subcommand or any argument.
func parseSubcommand(args []string, cmd, sub string) (*flagSet, error) {
	if len(args) == 0 || args[0] != sub {
		return nil, usageErr("%s needs a subcommand: %s", cmd, sub)
	}
	fs := flagsOf(cmd + " " + sub)
	pos, err := fs.parse(args[1:])
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, usageErr("%s %s takes no arguments", cmd, sub)
	}
	return fs, nil
}

// workspaceConfig loads the configuration as run would for the
// --workspace (default .) and --config flags of fs.
func workspaceConfig(fs *flagSet, getenv func(string) string) (config.Config, error) {
	home, _ := os.UserHomeDir()
	cfg, err := config.Load(config.Sources{File: fs.values["config"], Home: home, Workspace: runner.Abs(wsOr(fs.values["workspace"])), Getenv: getenv, Kinds: actors.BuiltinKinds()})
	if err != nil {
		return config.Config{}, usageErr("%v", err)
	}
	return cfg, nil
}

// wsOr is the workspace flag's directory, the current one when not given.
func wsOr(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}
