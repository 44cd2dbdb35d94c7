package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Network is what a confined command may reach.
type Network string

// The network modes.
const (
	// NetworkAllow leaves the network as it is.
	NetworkAllow Network = "allow"
	// NetworkDeny gives the command a network namespace with no interface up.
	NetworkDeny Network = "deny"
	// NetworkLoopback gives the command a network namespace of its own with
	// only its own loopback up: it reaches servers it starts itself, not
	// the host's loopback.
	NetworkLoopback Network = "loopback"
)

// rank orders the modes from the widest to the narrowest.
func (n Network) rank() int {
	switch n {
	case NetworkAllow, "":
		return 0
	case NetworkLoopback:
		return 1
	default:
		return 2
	}
}

// Policy is what a confined command may do. It travels to the launcher in
// the environment, so it holds paths and switches only.
type Policy struct {
	// Writable are the trees the command may write beneath (and read,
	// even under DenyRead): the workspace or worktree, the command's
	// private TMPDIR, sandbox.writable.
	Writable []string `json:"writable"`
	// DenyRead are the trees and files the command may not read.
	DenyRead []string `json:"deny_read"`
	// ReadOnly are trees and files beneath Writable the command may read
	// but not change, create or remove: the workspace's .git (git's
	// config, hooks, info, worktrees; a worktree's .git file) and .troupe
	// (troupe's own files). See readonly.go for how they are kept.
	ReadOnly []string `json:"read_only,omitempty"`
	// Network is allow, deny or loopback; empty means allow.
	Network Network `json:"network"`
	// Required refuses to start a command when a part of the policy
	// cannot be enforced, instead of starting it with what can.
	Required bool `json:"required,omitempty"`
}

// DefaultDenyRead are the credential stores read is refused to, under
// home: SSH, cloud and container registry credentials, git and netrc
// passwords, GnuPG, and troupe's own configuration and data.
func DefaultDenyRead(home string) []string {
	rel := []string{".ssh", ".aws", ".config/gcloud", ".azure", ".kube", ".docker/config.json",
		".netrc", ".git-credentials", ".gnupg", ".config/troupe", ".local/share/troupe"}
	out := make([]string, len(rel))
	for i, r := range rel {
		out[i] = filepath.Join(home, r)
	}
	return out
}

// ExpandHome turns a leading "~" or "~/" of each path into home.
func ExpandHome(paths []string, home string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		switch {
		case p == "~":
			p = home
		case strings.HasPrefix(p, "~/"):
			p = filepath.Join(home, p[2:])
		}
		out = append(out, p)
	}
	return out
}

// Validate checks that every path is absolute and the network mode known.
func (p Policy) Validate() error {
	switch p.Network {
	case "", NetworkAllow, NetworkDeny, NetworkLoopback:
	default:
		return fmt.Errorf("%w: network must be allow, deny or loopback, got %q", ErrBadPolicy, p.Network)
	}
	for _, list := range [][]string{p.Writable, p.DenyRead, p.ReadOnly} {
		for _, path := range list {
			if !filepath.IsAbs(path) {
				return fmt.Errorf("%w: %q is not an absolute path", ErrBadPolicy, path)
			}
		}
	}
	return nil
}

// Within returns p narrowed so that it asks for nothing outer does not
// allow: its writable trees must lie beneath one of outer's, it keeps
// outer's denied reads, its network is no wider than outer's and it is
// required when outer is, and it keeps outer's read-only trees. A node applies a task's policy within its own
// this way; ErrWiden names what was asked beyond it.
func (p Policy) Within(outer Policy) (Policy, error) {
	out := Policy{Network: p.Network, Required: p.Required || outer.Required}
	for _, w := range p.Writable {
		if !beneathAny(w, outer.Writable) {
			return Policy{}, fmt.Errorf("%w: %s is not writable here", ErrWiden, w)
		}
		out.Writable = append(out.Writable, w)
	}
	if p.Network.rank() < outer.Network.rank() {
		return Policy{}, fmt.Errorf("%w: network %s, at most %s here", ErrWiden, p.Network, outer.Network)
	}
	out.DenyRead = union(p.DenyRead, outer.DenyRead)
	out.ReadOnly = union(p.ReadOnly, outer.ReadOnly)
	return out, nil
}

// String is the policy in one line, for `config print`, `tools list`
// and logs.
func (p Policy) String() string {
	n := p.Network
	if n == "" {
		n = NetworkAllow
	}
	req := ""
	if p.Required {
		req = ", required"
	}
	ro := ""
	if len(p.ReadOnly) > 0 {
		ro = " except [" + strings.Join(p.ReadOnly, ", ") + "] (read-only)"
	}
	return fmt.Sprintf("writes beneath [%s]%s; reads everywhere except [%s]; network %s; no_new_privs, seccomp%s",
		strings.Join(p.Writable, ", "), ro, strings.Join(p.DenyRead, ", "), n, req)
}

// union is a followed by the items of b it lacks.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// beneathAny reports whether path is one of roots or lies beneath one.
func beneathAny(path string, roots []string) bool {
	for _, r := range roots {
		if isBeneath(path, r) {
			return true
		}
	}
	return false
}

// isBeneath reports whether path is root or lies beneath it (both clean
// and absolute).
func isBeneath(path, root string) bool {
	path, root = filepath.Clean(path), filepath.Clean(root)
	if path == root || root == "/" {
		return true
	}
	return strings.HasPrefix(path, root+string(filepath.Separator))
}
