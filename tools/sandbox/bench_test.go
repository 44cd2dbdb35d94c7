package sandbox

import (
	"os/exec"
	"testing"
)

// BenchmarkEcho is the cost of the sandbox per command: `sh -c echo`
// started plainly and through the launcher (Landlock, seccomp,
// capabilities; network deny adds the user and network namespaces).
func BenchmarkEcho(b *testing.B) {
	ws := b.TempDir()
	pol := Policy{Writable: []string{ws}, DenyRead: DefaultDenyRead("/root"), Network: NetworkAllow}
	s := Check()
	run := func(b *testing.B, confine bool, p Policy) {
		for b.Loop() {
			cmd := exec.Command("sh", "-c", "echo hi")
			cmd.Dir = ws
			if confine {
				if err := Confine(cmd, p, s); err != nil {
					b.Fatal(err)
				}
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	}
	b.Run("plain", func(b *testing.B) { run(b, false, pol) })
	b.Run("sandbox", func(b *testing.B) { run(b, true, pol) })
	deny := pol
	deny.Network = NetworkDeny
	b.Run("sandbox-network-deny", func(b *testing.B) { run(b, true, deny) })
}
