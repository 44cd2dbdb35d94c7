package sandbox

import (
	"fmt"
	"os"
	"strings"
)

// Explain returns the one line a tool result adds when a confined command
// failed in a way the sandbox may have caused: its exit status is not 0
// and its output carries the error the kernel gives for the rule
// (Permission denied for Landlock, Operation not permitted for seccomp
// and capabilities, Network is unreachable for the network namespace).
// It returns "" otherwise.
func Explain(exitCode int, output string, p Policy) string {
	if exitCode == 0 {
		return ""
	}
	low := strings.ToLower(output)
	switch {
	case strings.Contains(low, "permission denied"):
		return fmt.Sprintf("[sandbox: writes are allowed only beneath %s; reads of %s are refused]",
			strings.Join(p.Writable, ", "), strings.Join(p.DenyRead, ", "))
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
