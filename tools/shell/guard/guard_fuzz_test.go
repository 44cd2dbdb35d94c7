package guard

import (
	"strings"
	"testing"
)

// FuzzShellGuard checks that the guard never panics and that wrapping a
// refused command in bash -c, eval or a pipe into sh never gets it
// through.
func FuzzShellGuard(f *testing.F) {
	for _, c := range guardBlocked {
		f.Add(c.cmd)
	}
	for _, c := range guardAllowed {
		f.Add(c)
	}
	f.Add("a=$((1/0)); ${x?unset}; ${y:0:99999999999}; $[ 1 ]")
	f.Add("cat <<-EOF\n\tx\n\tEOF\n")
	g := &Guard{home: "/home/agent"}
	f.Fuzz(func(t *testing.T, cmd string) {
		if len(cmd) > 4096 {
			return
		}
		r := g.Check(cmd)
		if r == nil || strings.ContainsRune(cmd, 0) {
			return
		}
		for _, wrapped := range []string{"bash -c " + shellQuote(cmd), "eval " + shellQuote(cmd)} {
			if g.Check(wrapped) == nil {
				t.Errorf("%q is refused (%s) but %q is not", cmd, r.Rule, wrapped)
			}
		}
	})
}
