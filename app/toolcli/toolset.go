// Package toolcli is `orchestrator tools`: the built-in tools and the
// configured MCP servers' as one agent would have them (its configuration,
// secrets redacted, commands in the worker kind's sandbox), outside a run:
// listed with their tiers, called one at a time, or a JSON Lines script of
// calls checked whole before any runs.
package toolcli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/app/setup"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/builtin"
	"github.com/troupe-ai/troupe/tools/mcp"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// toolset is what the tools command works with: the built-in tools, the
// tools of the configured MCP servers it needs (started for the command,
// stopped by close), and search_tools over the optional ones.
type toolset struct {
	cfg     config.Config
	reg     *tools.Registry
	tiers   tools.Tiers
	sources []tools.ToolSource
	// sandbox confines the commands the shell tools start, as in a run
	// (nil: sandbox.mode off); its policy is the worker kind's.
	sandbox *sandbox.Settings
}

// cliKind is the agent kind whose sandbox policy the tools command's
// session gets: the shell tools are a worker's.
const cliKind = "worker"

// openToolset loads the configuration (--config FILE over the usual
// files) and starts the MCP servers the calls need (all when listing). A server that
// cannot start is reported on stderr and left out; when listing, so are
// the tools a server offers that cannot be used.
func openToolset(ctx context.Context, getenv func(string) string, ws, cfgFile string, calls []string, listing bool, stderr io.Writer) (*toolset, error) {
	need := serversFor(calls...)
	if listing {
		need = func(string) bool { return true }
	}
	home, _ := os.UserHomeDir()
	cfg, err := config.Load(config.Sources{File: cfgFile, Home: home, Workspace: runner.Abs(ws), Getenv: getenv, Kinds: actors.BuiltinKinds()})
	if err != nil {
		return nil, runner.Usage("%v", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, runner.Usage("config: %v", err)
	}
	box := setup.Sandbox(cfg, home)
	srcs, err := setup.MCPServers(cfg, ws, nil, getenv, zerolog.Nop())
	if err != nil {
		return nil, runner.Usage("%v", err)
	}
	// The run's check: one warning line for what this kernel does not
	// enforce, a refusal (exit 2) with sandbox.required; only where a
	// process may start (read-only built-in calls start none).
	all := builtin.All()
	if startsProcesses(listing, calls, all, srcs, need) {
		warn, err := setup.SandboxPreflight(box, []string{cliKind})
		if err != nil {
			setup.CloseToolSources(srcs)
			return nil, runner.Usage("%v", err)
		}
		if warn != "" {
			fmt.Fprintf(stderr, "orchestrator: %s\n", warn)
		}
	}
	ts := &toolset{cfg: cfg, tiers: setup.Tiers(cfg.Tools), sources: srcs, sandbox: box}
	for _, s := range srcs {
		if !need(s.Name()) {
			continue
		}
		listed, err := s.Tools(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "orchestrator: %v; its tools are left out\n", err)
			continue
		}
		if m, ok := s.(*mcp.Server); ok && listing {
			for _, sk := range m.Skipped() {
				fmt.Fprintf(stderr, "orchestrator: MCP server %s: left out %s\n", s.Name(), sk)
			}
		}
		all = append(all, listed...)
	}
	var optional []tools.Tool
	for _, t := range all {
		if ts.tiers.TierOf(t.Spec()) != tools.TierAlways {
			optional = append(optional, t)
		}
	}
	all = append(all, tools.SearchTools(tools.NewRegistry(optional...)))
	if ts.reg, err = tools.BuildRegistry(all...); err != nil {
		ts.Close()
		return nil, err
	}
	return ts, nil
}

func (t *toolset) Close() { setup.CloseToolSources(t.sources) }

// box is the sandbox of the session's commands over workspace root, nil
// with sandbox.mode off.
func (t *toolset) box(root string) *sandbox.Box {
	if t.sandbox == nil {
		return nil
	}
	return t.sandbox.Box(cliKind, root)
}

// startsProcesses reports whether the command may start a process under
// the sandbox: when listing or starting an MCP server, or calling a
// built-in tool that is not read-only (shell). Calls of read-only tools
// (grep, read_file) start none, so the kernel is not probed for them.
func startsProcesses(listing bool, calls []string, builtins []tools.Tool, srcs []tools.ToolSource, need func(string) bool) bool {
	if listing || slices.ContainsFunc(srcs, func(s tools.ToolSource) bool { return need(s.Name()) }) {
		return true
	}
	return slices.ContainsFunc(calls, func(name string) bool {
		i := slices.IndexFunc(builtins, func(t tools.Tool) bool { return t.Spec().Name == name })
		return i < 0 || !builtins[i].Spec().ReadOnly
	})
}

// serversFor says which MCP servers calls of names need: the one a
// mcp__<server>__ name names, all of them for search_tools.
func serversFor(names ...string) func(string) bool {
	want := map[string]bool{}
	for _, n := range names {
		if n == tools.NameSearchTools {
			return func(string) bool { return true }
		}
		if s, ok := mcp.SplitToolName(n); ok {
			want[s] = true
		}
	}
	return func(s string) bool { return want[s] }
}
