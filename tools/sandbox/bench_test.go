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
	// As the shell tools start commands: through an agent's box, whose
	// commands share one network namespace.
	for _, p := range []Policy{pol, deny} {
		b.Run("box-network-"+string(p.Network), func(b *testing.B) {
			box := NewBox(p, s, b.TempDir())
			defer box.Close()
			for b.Loop() {
				cmd := exec.Command("sh", "-c", "echo hi")
				cmd.Dir = ws
				err := box.Start(cmd)
				if err == nil {
					err = cmd.Wait()
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The launcher (our binary re-executed in new user and network
	// namespaces), the path of a process that may not make network
	// namespaces itself.
	b.Run("launcher-network-deny", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("sh", "-c", "echo hi")
			cmd.Dir = ws
			err := Confine(cmd, deny, s)
			if err == nil {
				err = onFreshThread(cmd, cmd.Start)
			}
			if err == nil {
				err = cmd.Wait()
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPrepare is the sandbox's own work per command on the fast
// path, without the fork and exec both paths share: a fresh thread, the
// capability drop, the Landlock ruleset (read grants from the cache) and
// the seccomp filter.
func BenchmarkPrepare(b *testing.B) {
	pol := Policy{Writable: []string{b.TempDir()}, DenyRead: DefaultDenyRead("/root"), Network: NetworkAllow}
	s := Check()
	for b.Loop() {
		if err := onFreshThread(nil, func() error { return prepareThread(pol, s, false) }); err != nil {
			b.Fatal(err)
		}
	}
}
