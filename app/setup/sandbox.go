package setup

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/internal/statedir"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// MCPKind is the kind name sandbox.network uses for stdio MCP servers.
const MCPKind = "mcp"

// KindAny stands for any kind where the policy's network does not matter.
const KindAny = "default"

// Sandbox is the run's sandbox from the config, nil with sandbox.mode
// off: the built-in deny list under home plus sandbox.deny_read, troupe's
// state directory as a whole (every workspace's: checkpoints, task
// secrets, the embedded server's store and credentials), nats.store_dir
// and the NATS credentials (see credsDeny) and TLS key; sandbox.writable;
// the network per kind; what this kernel supports.
func Sandbox(cfg config.Config, home string) *sandbox.Settings {
	c := cfg.Sandbox
	if c.Mode == config.SandboxOff {
		return nil
	}
	deny := append(sandbox.DefaultDenyRead(home), sandbox.ExpandHome(c.DenyRead, home)...)
	if root, err := statedir.Root(getenv, home); err == nil {
		deny = append(deny, root)
	}
	for _, f := range []string{cfg.NATS.StoreDir, credsDeny(cfg.NATS.Creds), cfg.NATS.TLSKey} {
		if f != "" {
			if abs, err := filepath.Abs(sandbox.ExpandHome([]string{f}, home)[0]); err == nil {
				deny = append(deny, abs)
			}
		}
	}
	net := map[string]sandbox.Network{}
	for k, v := range c.Network {
		net[k] = sandbox.Network(v)
	}
	return &sandbox.Settings{Required: c.Required, Network: net, Writable: sandbox.ExpandHome(c.Writable, home), Commit: c.Commit,
		DenyRead: slices.Compact(deny), Detect: sandbox.Check}
}

// credsDeny is what a creds file takes off the commands' reads: its
// whole folder when the folder holds key seeds (*.nk) or another creds
// file (another role's, which could mint or act as that role), else the
// file itself; "" for none.
func credsDeny(creds string) string {
	if creds == "" {
		return ""
	}
	dir := filepath.Dir(creds)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return creds
	}
	for _, e := range entries {
		n := e.Name()
		if strings.HasSuffix(n, ".nk") || (strings.HasSuffix(n, ".creds") && n != filepath.Base(creds)) {
			return dir
		}
	}
	return creds
}

// SandboxPreflight is the run's check before it starts: "" when the
// kernel enforces everything the kinds' policies ask for; one warning
// line naming what it does not; an error (exit 2) when sandbox.required
// is set and a part is missing.
func SandboxPreflight(s *sandbox.Settings, kinds []string) (string, error) {
	if s == nil {
		return "", nil
	}
	// The strictest network mode asked for has the most to miss.
	worst := sandbox.Policy{Network: sandbox.NetworkAllow, Required: s.Required}
	for _, k := range append(kinds, MCPKind, "default") {
		if n := s.NetworkFor(k); n == sandbox.NetworkDeny || (n == sandbox.NetworkLoopback && worst.Network == sandbox.NetworkAllow) {
			worst.Network = n
		}
	}
	warn, err := s.Kernel().Preflight(worst)
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	if n := s.Kernel().Narrowed(s.PolicyFor(KindAny, "/")); n != "" {
		warn = strings.TrimPrefix(strings.Join([]string{warn, n}, "\n"), "\n")
	}
	return warn, nil
}

// SandboxSummary is the effective sandbox in a few lines, for `config
// print`, `tools list` and `sandbox check`: the policy of each kind.
func SandboxSummary(s *sandbox.Settings, workspace string, kinds []string) string {
	if s == nil {
		return "sandbox: off (sandbox.mode: off): commands run with this process's rights\n"
	}
	kinds = append(slices.Clone(kinds), MCPKind)
	sort.Strings(kinds)
	var b strings.Builder
	for _, k := range slices.Compact(kinds) {
		fmt.Fprintf(&b, "sandbox %s: %s\n", k, s.PolicyFor(k, workspace))
	}
	return b.String()
}
