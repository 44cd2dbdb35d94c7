package sandbox

import (
	"fmt"
	"os"
	"strings"
)

// Support is what this kernel offers the sandbox.
type Support struct {
	// LandlockABI is the Landlock ABI version, 0 without Landlock.
	LandlockABI int `json:"landlock_abi"`
	// Seccomp: seccomp filters can be installed.
	Seccomp bool `json:"seccomp"`
	// UserNS: an unprivileged user namespace can be created.
	UserNS bool `json:"user_namespaces"`
	// NetNS: a network namespace can be created (inside a user namespace,
	// or directly when this process may).
	NetNS bool `json:"network_namespaces"`
	// ThreadNetNS: this process can make a network namespace on a
	// thread and enter it (CAP_SYS_ADMIN), so commands with network deny
	// or loopback need no launcher.
	ThreadNetNS bool `json:"thread_network_namespaces"`
	// MountNS: a command can get a mount namespace of its own, made by
	// this process (ThreadMountNS) or through the launcher in a new user
	// namespace, so read-only trees beneath the workspace are bound
	// read-only; without it Landlock alone keeps them (see readonly.go).
	MountNS bool `json:"mount_namespaces"`
	// ThreadMountNS: this process can make a mount namespace on a thread
	// (CAP_SYS_ADMIN), so such commands need no launcher.
	ThreadMountNS bool `json:"thread_mount_namespaces"`
	// Notes say why a part is missing, when the probe said.
	Notes []string `json:"notes,omitempty"`
	// HolesFallback says why read-only trees beneath a writable one are
	// kept by Landlock alone (see fallback.go): for every command, with
	// no mount namespaces here, or since a command of this process could
	// not bind them; "" when they are bound read-only.
	HolesFallback string `json:"holes_fallback,omitempty"`
}

// AssumeMissingEnv is a test hook: a comma-separated list of landlock,
// seccomp, userns, netns, mountns that Check reports as absent, as an
// older or locked-down kernel would, and threadnetns and threadmountns,
// which send commands with network deny or loopback, or with read-only
// trees, through the launcher. It can only take enforcement away, as
// sandbox.mode: off can, or choose a slower or narrower path.
const AssumeMissingEnv = "TROUPE_SANDBOX_ASSUME_MISSING"

// pretend removes from s what the AssumeMissingEnv hook names.
func (s Support) pretend(list string) Support {
	for _, part := range strings.Split(list, ",") {
		switch strings.TrimSpace(part) {
		case "landlock":
			s.LandlockABI = 0
		case "seccomp":
			s.Seccomp = false
		case "userns":
			s.UserNS = false
			s.MountNS = s.ThreadMountNS
		case "netns":
			s.NetNS, s.ThreadNetNS = false, false
		case "threadnetns":
			s.ThreadNetNS = false
		case "mountns":
			s.MountNS, s.ThreadMountNS = false, false
		case "threadmountns":
			s.ThreadMountNS = false
			s.MountNS = s.MountNS && s.UserNS
		}
	}
	return s
}

// String is the support in a few lines, for `orchestrator sandbox check`.
func (s Support) String() string {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	ll := "no"
	if s.LandlockABI > 0 {
		ll = fmt.Sprintf("yes (ABI %d)", s.LandlockABI)
	}
	var b strings.Builder
	netns := yes(s.NetNS)
	switch {
	case s.ThreadNetNS:
		netns += " (made by this process)"
	case s.NetNS:
		netns += " (through the launcher)"
	}
	mountns := yes(s.MountNS)
	switch {
	case s.ThreadMountNS:
		mountns += " (made by this process: .git and .troupe bound read-only)"
	case s.MountNS:
		mountns += " (through the launcher: .git and .troupe bound read-only)"
	default:
		mountns += " (.git and .troupe kept read-only by Landlock alone: commands cannot create or remove entries directly in the workspace's top folder)"
	}
	fmt.Fprintf(&b, "landlock: %s\nseccomp: %s\nuser namespaces: %s\nnetwork namespaces: %s\nmount namespaces: %s\n",
		ll, yes(s.Seccomp), yes(s.UserNS), netns, mountns)
	for _, n := range s.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if s.HolesFallback != "" {
		fmt.Fprintf(&b, "read-only trees kept by Landlock alone: %s\n", s.HolesFallback)
	}
	return b.String()
}

// Missing names each part of p this kernel cannot enforce, with what is
// therefore not enforced.
func (s Support) Missing(p Policy) []string {
	var out []string
	if s.LandlockABI == 0 {
		out = append(out, "Landlock (writes outside the workspace and reads of sandbox.deny_read are not prevented)")
	} else if s.LandlockABI < 6 {
		out = append(out, fmt.Sprintf("Landlock ABI 6 (ABI %d here: commands may signal processes outside the sandbox)", s.LandlockABI))
	}
	if !s.Seccomp {
		out = append(out, "seccomp (ptrace, mount, bpf, keyring and module calls are not refused)")
	}
	switch p.Network {
	case NetworkDeny:
		if !s.NetNS && s.LandlockABI < 4 {
			out = append(out, "network namespaces and Landlock TCP rules (network: deny is not enforced)")
		} else if !s.NetNS {
			out = append(out, "network namespaces (network: deny refuses TCP only; UDP and raw sockets still reach the network)")
		}
	case NetworkLoopback:
		if !s.NetNS {
			out = append(out, "network namespaces (network: loopback is not enforced: the network is open)")
		}
	}
	return out
}

// Preflight is the check a run does once before it starts: nil and ""
// when everything p asks for is enforced; a one-line warning naming what
// is not; ErrUnsupported with the same text when p is required.
func (s Support) Preflight(p Policy) (warning string, err error) {
	miss := s.Missing(p)
	if len(miss) == 0 {
		return "", nil
	}
	line := "sandbox: not enforced on this kernel: " + strings.Join(miss, "; ")
	if p.Required {
		return "", fmt.Errorf("%w: %s (sandbox.required is set)", ErrUnsupported, strings.Join(miss, "; "))
	}
	return line, nil
}

// Narrowed says what a policy with read-only trees beneath the workspace
// costs on this kernel, "" when nothing: without mount namespaces Landlock
// alone keeps them, and the workspace's top folder loses its own write
// rights (see readonly.go). It is no gap in enforcement, so a required
// policy runs all the same.
func (s Support) Narrowed(p Policy) string {
	if len(p.ReadOnly) == 0 || s.MountNS || s.LandlockABI == 0 {
		return ""
	}
	return "sandbox: no mount namespaces here, so .git and .troupe are kept read-only by Landlock alone: " +
		"commands cannot create, rename or remove entries directly in the workspace's top folder (the file tools can)"
}

// Check probes the kernel once and returns what it supports (less what
// the AssumeMissingEnv hook takes away).
func Check() Support {
	s := probeOnce()
	if v := os.Getenv(AssumeMissingEnv); v != "" {
		s = s.pretend(v)
	}
	s.HolesFallback = HolesFallback()
	if s.HolesFallback == "" && !s.MountNS && s.LandlockABI > 0 {
		s.HolesFallback = s.noMountNS()
	}
	return s
}

// noMountNS says why a command gets no mount namespace here.
func (s Support) noMountNS() string {
	why := "no mount namespaces here: this process may not make one (no CAP_SYS_ADMIN) and no user namespace can be made for the launcher"
	if len(s.Notes) > 0 {
		why += " (" + strings.Join(s.Notes, "; ") + ")"
	}
	return why
}
