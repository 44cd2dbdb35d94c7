package config

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// MCP configures the MCP servers whose tools agents get, and troupe's
// own MCP server (orchestrator mcp).
type MCP struct {
	// StartTimeout bounds a server's start, handshake and tool listing.
	StartTimeout time.Duration `yaml:"start_timeout"`
	// Servers by name; their tools are mcp__<name>__<tool>.
	Servers map[string]MCPServer `yaml:"servers"`
	// MaxWorktreeServers bounds the stdio servers' instances that run at
	// once for agents in worktrees of their own (over all servers).
	MaxWorktreeServers int `yaml:"max_worktree_servers"`
	// MaxRuns caps the runs orchestrator mcp runs at once; KeepRuns is how
	// many finished runs it remembers for check_run; SessionTimeout ends
	// an HTTP session idle that long.
	MaxRuns        int           `yaml:"max_runs"`
	KeepRuns       int           `yaml:"keep_runs"`
	SessionTimeout time.Duration `yaml:"session_timeout"`
}

// MCPServer is one MCP server: a command run over stdio, or a streamable
// HTTP URL.
type MCPServer struct {
	// Command is the program and its arguments; ${TROUPE_TREE} in an
	// argument is the tree the instance serves (the workspace, or the
	// calling agent's worktree).
	Command []string `yaml:"command"`
	URL     string   `yaml:"url"`
	// Env is added to a stdio server's allow-listed environment; a value
	// may name our variables as ${NAME}, and the tree the instance
	// serves as ${TROUPE_TREE} (also set as TROUPE_TREE).
	Env map[string]string `yaml:"env"`
	// Headers go with every request to an HTTP server; values may name
	// our variables as ${NAME}.
	Headers map[string]string `yaml:"headers"`
	// Kinds get the server's tools (default root and worker).
	Kinds []string `yaml:"kinds"`
	// Timeout bounds one call (default tools.timeout).
	Timeout time.Duration `yaml:"timeout"`
	// Shared keeps one instance of a stdio server, in the workspace, for
	// every agent, even those in worktrees (for a server that touches no
	// files); by default an agent in a worktree gets its own instance there.
	Shared bool `yaml:"shared"`
}

// The tool tiers tools.tiers may set.
const (
	TierAlways      = "always"
	TierOnRelevance = "on-relevance"
	TierOnDemand    = "on-demand"
)

var (
	mcpServerName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]|_[A-Za-z0-9-])*$`) })
	mcpEnvName    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	envRef        = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\$\{[A-Za-z_][A-Za-z0-9_]*\}$`) })
	troupeRef     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{TROUPE_[A-Za-z0-9_]*\}`) })
)

// validateTools checks tools.definition_budget and tools.tiers.
func (c Config) validateTools() error {
	if c.Tools.DefinitionBudget < -1 {
		return bad("tools.definition_budget", "must be a number of tokens, 0 for the default or -1 to never defer, got %d", c.Tools.DefinitionBudget)
	}
	for _, name := range sortedKeys(c.Tools.Tiers) {
		tier := c.Tools.Tiers[name]
		if tier != TierAlways && tier != TierOnRelevance && tier != TierOnDemand {
			return bad("tools.tiers."+name, "must be always, on-relevance or on-demand, got %q", tier)
		}
		if _, err := path.Match(name, ""); err != nil {
			return bad("tools.tiers."+name, "the key must be a tool name or a pattern such as mcp__github__* (%v)", err)
		}
	}
	return nil
}

// validateMCP checks mcp.*, naming the setting.
func (c Config) validateMCP() error {
	switch {
	case c.MCP.StartTimeout < 0:
		return bad("mcp.start_timeout", "must be a duration such as 30s, got %s", c.MCP.StartTimeout)
	case c.MCP.MaxWorktreeServers < 1:
		return bad("mcp.max_worktree_servers", "must be at least 1 (server instances for agents in worktrees at once), got %d", c.MCP.MaxWorktreeServers)
	case c.MCP.MaxRuns < 1:
		return bad("mcp.max_runs", "must be at least 1 (runs at once), got %d", c.MCP.MaxRuns)
	case c.MCP.KeepRuns < 1:
		return bad("mcp.keep_runs", "must be at least 1 (finished runs check_run still finds), got %d", c.MCP.KeepRuns)
	case c.MCP.SessionTimeout <= 0:
		return bad("mcp.session_timeout", "must be a positive duration such as 30m, got %s", c.MCP.SessionTimeout)
	}
	for _, name := range sortedKeys(c.MCP.Servers) {
		s := c.MCP.Servers[name]
		at := "mcp.servers." + name
		switch {
		case len(name) > 32 || !mcpServerName().MatchString(name):
			return bad(at, "the name becomes part of tool names (mcp__%s__<tool>): use up to 32 letters, digits, '-' or single '_'", name)
		case len(s.Command) > 0 && s.URL != "":
			return bad(at, "set command (a server run on this machine) or url (an HTTP server), not both")
		case len(s.Command) == 0 && s.URL == "":
			return bad(at, "set command, e.g. [npx, -y, some-mcp-server], or url, e.g. http://127.0.0.1:8080/mcp")
		case len(s.Command) > 0 && strings.TrimSpace(s.Command[0]) == "":
			return bad(at+".command", "must start with the program to run; the first word is empty")
		case s.URL != "" && len(s.Env) > 0:
			return bad(at+".env", "only for servers run with command; an HTTP server takes headers")
		case s.URL != "" && s.Shared:
			return bad(at+".shared", "only for servers run with command; an HTTP server always has one instance")
		case len(s.Command) > 0 && len(s.Headers) > 0:
			return bad(at+".headers", "only for servers reached by url; a command takes env")
		case s.Timeout < 0:
			return bad(at+".timeout", "must be a duration such as 60s, or 0 for tools.timeout; got %s", s.Timeout)
		}
		if s.URL != "" {
			u, err := url.Parse(s.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return bad(at+".url", "must be an http:// or https:// URL, got %q", s.URL)
			}
		}
		for _, k := range sortedKeys(s.Env) {
			if !mcpEnvName().MatchString(k) {
				return bad(at+".env", "keys must be variable names (letters, digits and _, not starting with a digit); %q is not", k)
			}
		}
		for i, k := range s.Kinds {
			if strings.TrimSpace(k) == "" || slices.Contains(s.Kinds[:i], k) {
				return bad(fmt.Sprintf("%s.kinds[%d]", at, i), "must name an agent kind once each; %q is empty or given twice", k)
			}
		}
		if err := s.validateTree(at); err != nil {
			return err
		}
	}
	return nil
}

// TreeRef, in a stdio server's command arguments and env values, is the
// tree the server's instance serves: the workspace for the run's, an
// agent's worktree for its own (tools/mcp: TreeRef).
const TreeRef = "${TROUPE_TREE}"

// validateTree checks the uses of ${TROUPE_TREE} and of troupe's other
// names in a server's command, env and headers (at is the server's key).
func (s MCPServer) validateTree(at string) error {
	if len(s.Command) > 0 && strings.Contains(s.Command[0], TreeRef) {
		return bad(at+".command[0]", "%s cannot name the program: the tree is the agent's to write, and troupe never runs a program from it", TreeRef)
	}
	for i, arg := range s.Command {
		for _, ref := range troupeRef().FindAllString(arg, -1) {
			if ref != TreeRef {
				return bad(fmt.Sprintf("%s.command[%d]", at, i), "unknown placeholder %s; the one troupe fills in is %s (the tree the server's instance serves)", ref, TreeRef)
			}
		}
	}
	if _, set := s.Env["TROUPE_TREE"]; set {
		return bad(at+".env.TROUPE_TREE", "troupe sets it to the tree the server's instance serves; write %s in a value to use it", TreeRef)
	}
	for _, k := range sortedKeys(s.Headers) {
		if strings.Contains(s.Headers[k], TreeRef) {
			return bad(at+".headers."+k, "%s is for servers run with command: an HTTP server serves no tree", TreeRef)
		}
	}
	return nil
}

// secretValue reports whether a printed setting's value must be hidden:
// MCP servers' env and header values, unless they only name a variable.
func secretValue(key, value string) bool {
	if !strings.HasPrefix(key, "mcp.servers.") {
		return false
	}
	parts := strings.Split(key, ".")
	if len(parts) < 5 || (parts[3] != "env" && parts[3] != "headers") {
		return false
	}
	v := strings.Trim(value, `"'`)
	return v != "" && !envRef().MatchString(v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
