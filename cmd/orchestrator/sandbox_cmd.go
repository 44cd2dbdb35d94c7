package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/app/setup"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// cmdSandbox is `orchestrator sandbox check`: what this machine's kernel
// supports, each kind's effective sandbox, and the warning (or, with
// sandbox.required, the refusal: exit 2) a run would give.
func cmdSandbox(args []string, getenv func(string) string, stdout io.Writer) (int, error) {
	fs, err := parseSubcommand(args, "sandbox", "check")
	if err != nil {
		return exitUsage, err
	}
	cfg, err := workspaceConfig(fs, getenv)
	if err != nil {
		return exitUsage, err
	}
	home, _ := os.UserHomeDir()
	ws := wsOr(fs.values["workspace"])
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
