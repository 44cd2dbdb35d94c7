package setup

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/mcp"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// MCPServers builds the configured MCP servers, none started yet: each
// starts when an agent first needs its tools (or a tools call names one).
// kinds, when not nil, are the run's agent kinds, which every server's
// kinds must name. References to our environment in env and header
// values (${NAME}) are expanded with getenv, but for ${TROUPE_TREE}: the
// tree each instance serves, filled in when it starts; nothing else of
// ours reaches a server. Close them with CloseToolSources.
func MCPServers(cfg config.Config, workspace string, kinds map[string]actors.Kind, getenv func(string) string, log zerolog.Logger) ([]tools.ToolSource, error) {
	dir, err := filepath.Abs(workspace)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(cfg.MCP.Servers))
	for name := range cfg.MCP.Servers {
		names = append(names, name)
	}
	sort.Strings(names)
	home, _ := os.UserHomeDir()
	box := Sandbox(cfg, home)
	limit := mcp.NewLimit(cfg.MCP.MaxWorktreeServers)
	var out []tools.ToolSource
	for _, name := range names {
		s := cfg.MCP.Servers[name]
		for _, k := range s.Kinds {
			if _, ok := kinds[k]; kinds != nil && !ok {
				return nil, fmt.Errorf("config: mcp.servers.%s.kinds: no agent kind %q; the kinds are %s", name, k, kindNames(kinds))
			}
		}
		c := mcp.Config{Name: name, Command: s.Command, Dir: dir, URL: s.URL, Kinds: s.Kinds, Timeout: s.Timeout,
			StartTimeout: cfg.MCP.StartTimeout, Env: expandAll(s.Env, getenv), Headers: expandAll(s.Headers, getenv),
			Shared: s.Shared, Limit: limit}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("config: mcp.servers.%s: %w", name, err)
		}
		if box != nil && len(c.Command) > 0 {
			c.Sandbox = box.Box(MCPKind, dir)
			// An agent in a worktree gets an instance of its own there,
			// confined to that tree as its commands are.
			c.SandboxIn = func(inside, view string) *sandbox.Box { return box.BoxIn(MCPKind, inside, view) }
		}
		out = append(out, mcp.New(c, log))
	}
	return out, nil
}

// CloseToolSources stops every source (an MCP server's process group).
func CloseToolSources(srcs []tools.ToolSource) {
	for _, s := range srcs {
		_ = s.Close()
	}
}

// Tiers turns tools.definition_budget and tools.tiers into the tools'
// tier settings.
func Tiers(t config.Tools) tools.Tiers {
	out := tools.Tiers{Budget: t.DefinitionBudget}
	for name, tier := range t.Tiers {
		if out.Overrides == nil {
			out.Overrides = map[string]tools.Tier{}
		}
		switch tier {
		case config.TierAlways:
			out.Overrides[name] = tools.TierAlways
		case config.TierOnRelevance:
			out.Overrides[name] = tools.TierOnRelevance
		default:
			out.Overrides[name] = tools.TierOnDemand
		}
	}
	return out
}

var envRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`) })

func expandAll(m map[string]string, getenv func(string) string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = envRef().ReplaceAllStringFunc(v, func(ref string) string {
			if ref == mcp.TreeRef { // the instance's tree, filled in when it starts: never ours
				return ref
			}
			return getenv(ref[2 : len(ref)-1])
		})
	}
	return out
}

func kindNames(kinds map[string]actors.Kind) string {
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// getenv is the process's environment, for the programs.
var getenv = os.Getenv
