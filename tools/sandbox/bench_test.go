//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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
		defer reportCPU(b)()
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
	// With .git and .troupe read-only (as every agent's policy has them):
	// a mount namespace made by this process, one made through the
	// launcher, and Landlock alone.
	for _, d := range []string{".git/hooks", ".troupe"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	ro := pol
	ro.ReadOnly = []string{filepath.Join(ws, ".git"), filepath.Join(ws, ".troupe")}
	for _, m := range []struct{ name, missing string }{{"thread", ""}, {"launcher", "threadmountns"}, {"landlock", "mountns"}} {
		b.Run("sandbox-read-only-"+m.name, func(b *testing.B) {
			saved := s
			s = s.pretend(m.missing)
			defer func() { s = saved }()
			run(b, true, ro)
		})
	}
	deny := pol
	deny.Network = NetworkDeny
	b.Run("sandbox-network-deny", func(b *testing.B) { run(b, true, deny) })
	// As the shell tools start commands: through an agent's box, whose
	// commands share one network namespace.
	for _, p := range []Policy{pol, deny} {
		b.Run("box-network-"+string(p.Network), func(b *testing.B) {
			box := NewBox(p, s, b.TempDir())
			defer box.Close()
			defer reportCPU(b)()
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
		defer reportCPU(b)()
		for b.Loop() {
			cmd := exec.Command("sh", "-c", "echo hi")
			cmd.Dir = ws
			err := Confine(cmd, deny, s)
			if err == nil {
				err = onFreshThread(cmd, func() error { return startInUserNS(cmd) })
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

// reportCPU, deferred, reports the CPU time (user + system) per
// operation of this process and its waited-for children (the commands,
// the launcher): steadier than wall time on a shared machine.
func reportCPU(b *testing.B) func() {
	before := cpuNow()
	return func() { b.ReportMetric(float64((cpuNow()-before).Microseconds())/1000/float64(b.N), "cpu-ms/op") }
}

func cpuNow() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
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
