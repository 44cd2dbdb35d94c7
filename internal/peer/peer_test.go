package peer

import (
	"fmt"
	"strings"
	"testing"
)

// stopped records how a test was stopped. It stands in for *testing.T,
// whose Skipf and Fatalf end the calling goroutine.
type stopped struct {
	testing.TB
	how, msg string
}

func (s *stopped) Helper() {}
func (s *stopped) Skipf(format string, args ...any) {
	s.how, s.msg = "skip", fmt.Sprintf(format, args...)
}
func (s *stopped) Fatalf(format string, args ...any) {
	s.how, s.msg = "fail", fmt.Sprintf(format, args...)
}

// A missing peer skips the test with the reason locally, and fails it
// naming the peer under CI=true; CI=false or 0 is local.
func TestMissingPeerFailsInCI(t *testing.T) {
	for _, c := range []struct{ ci, want string }{{"", "skip"}, {"false", "skip"}, {"0", "skip"}, {"true", "fail"}, {"1", "fail"}} {
		t.Run("CI="+c.ci, func(t *testing.T) {
			t.Setenv("CI", c.ci)
			s := &stopped{TB: t}
			if p := Need(s, "troupe-no-such-program", "troupe-no-such-either"); p != "" {
				t.Fatalf("found %q", p)
			}
			if s.how != c.want || !strings.Contains(s.msg, "missing peer troupe-no-such-program: troupe-no-such-program or troupe-no-such-either is not on PATH") {
				t.Errorf("%s: %q", s.how, s.msg)
			}
		})
	}
}

// A peer on PATH is found, whatever CI says, and the test goes on.
func TestNeedFindsAPeer(t *testing.T) {
	t.Setenv("CI", "true")
	t.Setenv("PATH", t.TempDir()+":"+"/usr/bin:/bin")
	s := &stopped{TB: t}
	if p := Need(s, "troupe-no-such-program", "sh"); p == "" || s.how != "" {
		t.Errorf("sh: %q, stopped %s %q", p, s.how, s.msg)
	}
}
