package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/internal/config"
	"github.com/troupe-ai/troupe/internal/runner"
	"github.com/troupe-ai/troupe/internal/setup"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/builtin"
	"github.com/troupe-ai/troupe/tools/mcp"
)

// toolset is what the tools command works with: the built-in tools, the
// tools of the configured MCP servers it needs (started for the command,
// stopped by close), and search_tools over the optional ones.
type toolset struct {
	cfg     config.Config
	reg     *tools.Registry
	tiers   tools.Tiers
	sources []tools.ToolSource
}

// openToolset loads the configuration (--config FILE over the usual
// files) and starts the MCP servers for which need is true. A server that
// cannot start is reported on stderr and left out; when listing, so are
// the tools a server offers that cannot be used.
func openToolset(ctx context.Context, getenv func(string) string, ws, cfgFile string, need func(server string) bool, listing bool, stderr io.Writer) (*toolset, error) {
	home, _ := os.UserHomeDir()
	cfg, err := config.Load(config.Sources{File: cfgFile, Home: home, Workspace: runner.Abs(ws), Getenv: getenv})
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, usageErr("config: %v", err)
	}
	srcs, err := setup.MCPServers(cfg, ws, nil, getenv, zerolog.Nop())
	if err != nil {
		return nil, usageErr("%v", err)
	}
	ts := &toolset{cfg: cfg, tiers: setup.Tiers(cfg.Tools), sources: srcs}
	all := builtin.All()
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
		ts.close()
		return nil, err
	}
	return ts, nil
}

func (t *toolset) close() { setup.CloseToolSources(t.sources) }

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
