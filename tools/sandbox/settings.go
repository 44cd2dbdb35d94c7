package sandbox

import (
	"path/filepath"
	"slices"
)

// Settings are a run's sandbox configuration, from which each agent's
// policy is made: the same for every agent but its writable workspace and
// its kind's network mode.
type Settings struct {
	// Required refuses a command when a part cannot be enforced.
	Required bool
	// Network is the mode per agent kind; "default" for kinds not listed,
	// allow when neither is.
	Network map[string]Network
	// Writable and DenyRead are absolute paths ("~" expanded), besides
	// the workspace and the built-in deny list.
	Writable, DenyRead []string
	// Support is what the kernel offers, when Detect is nil.
	Support Support
	// Detect, when set, says what the kernel offers on first need (Check,
	// which probes once per process): a command that starts no process,
	// such as a read-only tools call, never probes the kernel.
	Detect func() Support
	// TmpBase is where private TMPDIRs are made ("" for the system's).
	TmpBase string
	// Commit are the kinds that may commit in a worktree of their own
	// (see commit.go).
	Commit []string
}

// NetworkFor is the network mode of an agent kind.
func (s Settings) NetworkFor(kind string) Network {
	if n, ok := s.Network[kind]; ok {
		return n
	}
	if n, ok := s.Network["default"]; ok {
		return n
	}
	return NetworkAllow
}

// ReadOnlyNames are the entries of a workspace's root its commands may
// read but not change: git's folder (a worktree's .git file) and troupe's.
var ReadOnlyNames = []string{".git", ".troupe"}

// PolicyFor is the policy of an agent of kind working in workspace: it
// writes beneath the workspace (but not its .git and .troupe) and
// sandbox.writable, and, for a kind of Commit in a worktree, what a
// commit there writes.
func (s Settings) PolicyFor(kind, workspace string) Policy {
	return s.policyFor(kind, workspace, workspace)
}

// policyFor is PolicyFor for a workspace this process reads at view (the
// path its commands see is workspace: an overlay worktree's mount point,
// whose view is /proc/<holder>/root/...).
func (s Settings) policyFor(kind, workspace, view string) Policy {
	var ro []string
	for _, n := range ReadOnlyNames {
		ro = append(ro, filepath.Join(workspace, n))
	}
	w := append([]string{workspace}, s.Writable...)
	if slices.Contains(s.Commit, kind) {
		cw, cro := commitAccess(workspace, view)
		w, ro = append(w, cw...), append(ro, cro...)
	}
	return Policy{
		Writable: w,
		ReadOnly: ro,
		DenyRead: slices.Clone(s.DenyRead),
		Network:  s.NetworkFor(kind),
		Required: s.Required,
	}
}

// Kernel is what the kernel offers: Detect's answer, or Support.
func (s Settings) Kernel() Support {
	if s.Detect != nil {
		return s.Detect()
	}
	return s.Support
}

// Box makes the sandbox of an agent of kind working in workspace. With
// Detect set, the kernel is probed when the box starts its first command.
func (s Settings) Box(kind, workspace string) *Box {
	return s.BoxIn(kind, workspace, workspace)
}

// BoxIn is Box for a workspace whose commands see it at workspace and
// this process reads at view (tools.Workspace's CommandRoot and Root).
func (s Settings) BoxIn(kind, workspace, view string) *Box {
	b := NewBox(s.policyFor(kind, workspace, view), s.Support, s.TmpBase)
	b.detect = s.Detect
	return b
}
