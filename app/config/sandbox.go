package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Sandbox configures the OS sandbox the tools' commands start in (shell
// one-shots, sessions and background jobs, stdio MCP servers); see
// package tools/sandbox.
type Sandbox struct {
	// Mode is on (the default) or off, the explicit opt-out.
	Mode string `yaml:"mode"`
	// Required refuses to run (exit 2) when the kernel cannot enforce a
	// part of the sandbox, instead of warning once and running with the
	// rest.
	Required bool `yaml:"required"`
	// Network is allow, deny or loopback per agent kind; "default" is for
	// kinds not listed. A single word (network: deny) is short for
	// {default: deny}.
	Network NetworkModes `yaml:"network"`
	// Writable are trees commands may write beneath besides the workspace
	// (or worktree) and their private TMPDIR, e.g. ~/.cache/go-build.
	Writable []string `yaml:"writable"`
	// DenyRead are trees or files commands may not read, on top of the
	// built-in list (~/.ssh, ~/.aws, ... and troupe's own data).
	DenyRead []string `yaml:"deny_read"`
	// Commit are the agent kinds whose commands may commit in a worktree
	// of their own (its HEAD, index and logs, the repository's objects;
	// never its config, hooks, refs or another worktree). None by
	// default: .git is read-only to agents.
	Commit []string `yaml:"commit"`
}

// NetworkModes are the network modes by agent kind. Like any map in the
// configuration, a layer's keys are added to those of the layers under
// it; a scalar sets "default" (kinds with a key of their own keep it).
type NetworkModes map[string]string

// UnmarshalYAML takes a mapping of kinds, or one mode as the default's.
func (n *NetworkModes) UnmarshalYAML(value *yaml.Node) error {
	var m map[string]string
	if value.Kind == yaml.ScalarNode {
		m = map[string]string{"default": value.Value}
	} else if err := value.Decode(&m); err != nil {
		return err
	}
	if *n == nil {
		*n = NetworkModes{}
	}
	maps.Copy(*n, m)
	return nil
}

// The sandbox modes.
const (
	SandboxOn  = "on"
	SandboxOff = "off"
)

// NetworkFor is the network mode for an agent kind.
func (s Sandbox) NetworkFor(kind string) string {
	if n, ok := s.Network[kind]; ok {
		return n
	}
	if n, ok := s.Network["default"]; ok {
		return n
	}
	return "allow"
}

func (s Sandbox) validate() error {
	if s.Mode != SandboxOn && s.Mode != SandboxOff {
		return bad("sandbox.mode", "must be on or off, got %q", s.Mode)
	}
	for _, kind := range sortedKeys(s.Network) {
		switch s.Network[kind] {
		case "allow", "deny", "loopback":
		default:
			return bad("sandbox.network."+kind, "must be allow, deny or loopback, got %q", s.Network[kind])
		}
	}
	for i, k := range s.Commit {
		if strings.TrimSpace(k) == "" || strings.ContainsAny(k, " .*>/") {
			return bad(fmt.Sprintf("sandbox.commit[%d]", i), "must name an agent kind, got %q", k)
		}
	}
	for name, list := range map[string][]string{"sandbox.writable": s.Writable, "sandbox.deny_read": s.DenyRead} {
		for i, p := range list {
			if !filepath.IsAbs(p) && p != "~" && !strings.HasPrefix(p, "~/") {
				return bad(fmt.Sprintf("%s[%d]", name, i), "must be an absolute path or start with ~/, got %q", p)
			}
		}
	}
	return nil
}

// networkRank orders network modes from the widest.
func networkRank(n string) int {
	switch n {
	case "deny":
		return 2
	case "loopback":
		return 1
	}
	return 0
}

// loosens says what after widens compared with before, or "": a
// workspace's own .troupe/config.yaml is writable by the very commands
// the sandbox confines, so it may tighten the sandbox but not loosen it.
func (before Sandbox) loosens(after Sandbox) string {
	switch {
	case before.Mode != SandboxOff && after.Mode == SandboxOff:
		return "sandbox.mode"
	case before.Required && !after.Required:
		return "sandbox.required"
	}
	for _, w := range after.Writable {
		if !slices.Contains(before.Writable, w) {
			return "sandbox.writable"
		}
	}
	for _, d := range before.DenyRead {
		if !slices.Contains(after.DenyRead, d) {
			return "sandbox.deny_read"
		}
	}
	for _, k := range after.Commit {
		if !slices.Contains(before.Commit, k) {
			return "sandbox.commit"
		}
	}
	kinds := map[string]bool{"default": true}
	for k := range before.Network {
		kinds[k] = true
	}
	for k := range after.Network {
		kinds[k] = true
	}
	for k := range kinds {
		if networkRank(after.NetworkFor(k)) < networkRank(before.NetworkFor(k)) {
			return "sandbox.network." + k
		}
	}
	return ""
}
