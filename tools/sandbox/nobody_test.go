//go:build linux

package sandbox

import (
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/internal/testfiles"
)

// TestSandboxAsNobody: the sandbox as a user who is not root (troupe's
// users are not), in a program that made itself non-dumpable as the
// orchestrator and the node do (issue 30): the probe finds the user
// namespaces there are, .git and .troupe are kept read-only through the
// launcher while a command still creates entries at the workspace's top,
// and loopback comes up in the launcher's network namespace.
func TestSandboxAsNobody(t *testing.T) {
	testfiles.AsNobody(t, "^(TestProbeWhenNonDumpable|TestGitAndTroupeReadOnly|TestNetwork)$", testfiles.NoDumpEnv+"=1")
}

// TestProbeWhenNonDumpable: a non-dumpable program is told what a
// dumpable one is about user namespaces (a user other than root could
// not write its child's ID maps from one, and was told there were none).
func TestProbeWhenNonDumpable(t *testing.T) {
	was, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, uintptr(was), 0, 0, 0) })
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	want := tryClone(syscall.CLONE_NEWUSER|syscall.CLONE_NEWNET) == nil
	if !want {
		peer.Missing(t, "user namespaces", "this user may make none here (uid %d)", os.Getuid())
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if s := probe(); !s.UserNS || !s.MountNS {
		t.Errorf("non-dumpable, the probe says: %+v", s)
	}
	if now, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); now != 0 {
		t.Errorf("the probe left the process dumpable")
	}
}
