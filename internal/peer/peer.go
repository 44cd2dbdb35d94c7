// Package peer is how a test meets an outside program it needs (a peer:
// nats-server, rg, fd, git, Node with server-everything, a pseudo-terminal).
// A missing peer skips the test with the reason on a developer's machine,
// and fails it, naming the peer, under CI=true: there tests/run.sh has
// installed every peer, so a missing one is a broken set-up, not a pass.
package peer

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// install says how to get each peer Need knows.
var install = map[string]string{
	"nats-server": "apt-get install nats-server",
	"rg":          "apt-get install ripgrep",
	"fd":          "apt-get install fd-find",
	"fdfind":      "apt-get install fd-find",
	"git":         "apt-get install git",
	"git-lfs":     "apt-get install git-lfs",
	"jq":          "apt-get install jq",
	"node":        "apt-get install nodejs npm",
	"python3":     "apt-get install python3",
	"perl":        "apt-get install perl",
	"valgrind":    "apt-get install valgrind",
}

// InCI reports whether the tests run in CI: CI is set, and not to false
// or 0.
func InCI() bool {
	v := strings.ToLower(strings.TrimSpace(os.Getenv("CI")))
	return v != "" && v != "false" && v != "0"
}

// Missing stops t because peer is missing, saying why (format and args):
// it skips, or under CI=true fails naming the peer.
func Missing(t testing.TB, peer, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("missing peer %s: %s (CI=true: a test whose peer is missing fails; tests/run.sh installs the peers)", peer, why)
		return
	}
	t.Skipf("missing peer %s: %s", peer, why)
}

// Need returns the path of the first of names found on PATH (alternative
// names of one program, as fd and fdfind), or stops t (Missing) naming
// names[0].
func Need(t testing.TB, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	why := strings.Join(names, " or ") + " is not on PATH"
	if how := install[names[0]]; how != "" {
		why += " (" + how + ")"
	}
	Missing(t, names[0], "%s", why)
	return ""
}
