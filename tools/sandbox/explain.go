package sandbox

import (
	"fmt"
	"os"
	"strings"
)

// Explain returns the one line a tool result adds when a confined command
// failed in a way the sandbox may have caused: its exit status is not 0
// and its output carries the error the kernel gives for the rule
// (Permission denied for Landlock, Read-only file system or Device or
// resource busy for the read-only trees, Operation not permitted for
// seccomp and capabilities, Network is unreachable for the network
// namespace). It returns "" otherwise.
func Explain(exitCode int, output string, p Policy) string {
	if exitCode == 0 {
		return ""
	}
	low := strings.ToLower(output)
	ro := ""
	if len(p.ReadOnly) > 0 {
		ro = fmt.Sprintf(" except %s (read-only: what configures git and troupe is not the agent's)", strings.Join(p.ReadOnly, ", "))
	}
	switch {
	case len(p.ReadOnly) > 0 && (strings.Contains(low, "read-only file system") || strings.Contains(low, "device or resource busy")):
		return fmt.Sprintf("[sandbox: %s are read-only to agents' commands (rule: what configures git and troupe is not the agent's); writes are allowed beneath %s]",
			strings.Join(p.ReadOnly, ", "), strings.Join(p.Writable, ", "))
	case strings.Contains(low, "permission denied"):
		return fmt.Sprintf("[sandbox: writes are allowed only beneath %s%s; reads of %s are refused]",
			strings.Join(p.Writable, ", "), ro, strings.Join(p.DenyRead, ", "))
	case strings.Contains(low, "network is unreachable") || (p.Network != NetworkAllow && p.Network != "" &&
		(strings.Contains(low, "connection refused") || strings.Contains(low, "could not resolve") ||
			strings.Contains(low, "temporary failure in name resolution"))):
		return fmt.Sprintf("[sandbox: network is %s for this command (sandbox.network)]", p.Network)
	case strings.Contains(low, "operation not permitted"):
		return "[sandbox: ptrace, mount, namespaces, kernel modules, keyrings and bpf are refused; privileges cannot be gained]"
	}
	return ""
}

// TempDir makes a private temporary directory for one agent's commands
// (their TMPDIR, to be listed in Policy.Writable) under base, or the
// system's temporary directory when base is "". remove deletes it with
// what the commands left there.
func TempDir(base string) (dir string, remove func() error, err error) {
	dir, err = os.MkdirTemp(base, "troupe-agent-*")
	if err != nil {
		return "", nil, fmt.Errorf("make a private temporary directory: %w", err)
	}
	return dir, func() error { return os.RemoveAll(dir) }, nil
}
