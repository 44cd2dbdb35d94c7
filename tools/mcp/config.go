package mcp

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/troupe-ai/troupe/tools/sandbox"
)

// Config is one MCP server: a command run over stdio, or a streamable
// HTTP endpoint.
type Config struct {
	// Name names the server; its tools are mcp__<Name>__<tool>.
	Name string
	// Command is a stdio server's program and arguments; ${TROUPE_TREE}
	// in an argument is the tree the instance serves (tree.go).
	Command []string
	// Dir is a stdio server's working directory (the workspace).
	Dir string
	// Env is added to a stdio server's environment, which otherwise holds
	// only the allow-listed variables shell commands get, and TROUPE_TREE
	// (values are taken as given, but for ${TROUPE_TREE}: the caller
	// expands references to its own environment).
	Env map[string]string
	// URL is a streamable HTTP server's endpoint.
	URL string
	// Headers are sent with every request to URL (e.g. Authorization).
	Headers map[string]string
	// Kinds are the agent kinds that get the server's tools; empty means
	// DefaultKinds.
	Kinds []string
	// Timeout bounds one call (0: the tools' per-call timeout).
	Timeout time.Duration
	// StartTimeout bounds starting the server, the handshake and listing
	// its tools (0: DefaultStartTimeout).
	StartTimeout time.Duration
	// Sandbox confines a stdio server's process (nil: not confined);
	// the server closes it when it is closed.
	Sandbox *sandbox.Box
	// Shared keeps one instance, in Dir, for every agent, even those in
	// worktrees of their own: for a stdio server that touches no files
	// (an HTTP server always has one instance).
	Shared bool
	// SandboxIn makes the sandbox of an instance for an agent in a
	// worktree: its commands see the tree at inside, this process reads
	// it at view (sandbox.Settings.BoxIn). nil: such instances are not
	// confined (as the agents' commands are not, with the sandbox off).
	SandboxIn func(inside, view string) *sandbox.Box
	// Limit bounds the worktree instances that run at once, shared by
	// the servers of a run (nil: a limit of DefaultMaxInstances for this
	// server alone).
	Limit *Limit

	// enter, for an instance in an overlay worktree, is the argv prefix
	// that starts a program in the tree's namespaces at its root.
	enter func() []string
}

// DefaultKinds get a server's tools when its config names none: the
// kinds that change things, since a server's tools may.
var DefaultKinds = []string{"root", "worker"}

// DefaultMaxInstances bounds the worktree instances of a server with no
// Limit.
const DefaultMaxInstances = 8

// DefaultStartTimeout bounds a server's start, handshake and tool listing.
const DefaultStartTimeout = 30 * time.Second

var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// Validate reports the first problem with c, in words.
func (c Config) Validate() error {
	if err := CheckServerName(c.Name); err != nil {
		return err
	}
	switch {
	case len(c.Command) > 0 && c.URL != "":
		return errors.New("set command (a stdio server) or url (an HTTP server), not both")
	case len(c.Command) == 0 && c.URL == "":
		return errors.New("set command (a stdio server: [program, args...]) or url (a streamable HTTP endpoint)")
	case len(c.Command) > 0 && c.Command[0] == "":
		return errors.New("command: the program is empty")
	case c.URL != "" && len(c.Env) > 0:
		return errors.New("env is for stdio servers (command); an HTTP server takes headers")
	case len(c.Command) > 0 && len(c.Headers) > 0:
		return errors.New("headers are for HTTP servers (url); a stdio server takes env")
	case c.Timeout < 0 || c.StartTimeout < 0:
		return errors.New("timeout and start_timeout must not be negative")
	}
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("url %q: want an http:// or https:// URL", c.URL)
		}
	}
	for k := range c.Env {
		if !envName().MatchString(k) {
			return fmt.Errorf("env: %q is not a variable name", k)
		}
	}
	for i, k := range c.Kinds {
		if k == "" || slices.Contains(c.Kinds[:i], k) {
			return fmt.Errorf("kinds: %q is empty or repeated", k)
		}
	}
	return c.checkTree()
}

func (c Config) kinds() []string {
	if len(c.Kinds) == 0 {
		return DefaultKinds
	}
	return c.Kinds
}

func (c Config) startTimeout() time.Duration {
	if c.StartTimeout > 0 {
		return c.StartTimeout
	}
	return DefaultStartTimeout
}
