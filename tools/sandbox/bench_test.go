//go:build linux

package sandbox

import (
	"os/exec"
	"testing"
)

// BenchmarkEcho is the cost of the sandbox per command: `sh -c echo`
// started plainly and confined: with network allow on a prepared thread
// (Landlock, seccomp, capabilities), with network deny through the
// launcher (our binary re-executed, plus user and network namespaces).
func BenchmarkEcho(b *testing.B) {
	ws := b.TempDir()
	pol := Policy{Writable: []string{ws}, DenyRead: DefaultDenyRead("/root"), Network: NetworkAllow}
	s := Check()
	run := func(b *testing.B, confine bool, p Policy) {
		for b.Loop() {
			cmd := exec.Command("sh", "-c", "echo hi")
			cmd.Dir = ws
			var err error
			if confine {
				err = Start(cmd, p, s)
			} else {
				err = cmd.Start()
			}
			if err == nil {
				err = cmd.Wait()
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("plain", func(b *testing.B) { run(b, false, pol) })
	b.Run("sandbox", func(b *testing.B) { run(b, true, pol) })
	deny := pol
	deny.Network = NetworkDeny
	b.Run("sandbox-network-deny", func(b *testing.B) { run(b, true, deny) })
}

// BenchmarkPrepare is the sandbox's own work per command on the fast
// path, without the fork and exec both paths share: a fresh thread, the
// capability drop, the Landlock ruleset (read grants from the cache) and
// the seccomp filter.
func BenchmarkPrepare(b *testing.B) {
	pol := Policy{Writable: []string{b.TempDir()}, DenyRead: DefaultDenyRead("/root"), Network: NetworkAllow}
	s := Check()
	for b.Loop() {
		if err := onFreshThread(nil, func() error { return prepareThread(pol, s) }); err != nil {
			b.Fatal(err)
		}
	}
}
