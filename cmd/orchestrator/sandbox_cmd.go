package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/troupe-ai/troupe/internal/config"
	"github.com/troupe-ai/troupe/internal/runner"
	"github.com/troupe-ai/troupe/internal/setup"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// cmdSandbox is `orchestrator sandbox check`: what this machine's kernel
// supports, each kind's effective sandbox, and the warning (or, with
// sandbox.required, the refusal: exit 2) a run would give.
func cmdSandbox(args []string, getenv func(string) string, stdout io.Writer) (int, error) {
	if len(args) == 0 || args[0] != "check" {
		return exitUsage, usageErr("sandbox needs a subcommand: check")
	}
	fs := flagsOf("sandbox check")
	pos, err := fs.parse(args[1:])
	if err != nil {
		return exitUsage, err
	}
	if len(pos) > 0 {
		return exitUsage, usageErr("sandbox check takes no arguments")
	}
	ws := fs.values["workspace"]
	if ws == "" {
		ws = "."
	}
	home, _ := os.UserHomeDir()
	cfg, err := config.Load(config.Sources{File: fs.values["config"], Home: home, Workspace: runner.Abs(ws), Getenv: getenv})
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	fmt.Fprint(stdout, sandbox.Check().String())
	s := setup.Sandbox(cfg, home)
	kinds := []string{"explore", "planner", "root", "worker"}
	kinds = append(kinds, slices.Sorted(maps.Keys(cfg.Kinds))...)
	fmt.Fprint(stdout, setup.SandboxSummary(s, runner.Abs(ws), kinds))
	warn, err := setup.SandboxPreflight(s, kinds)
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	if warn != "" {
		fmt.Fprintln(stdout, warn)
	}
	return exitOK, nil
}
