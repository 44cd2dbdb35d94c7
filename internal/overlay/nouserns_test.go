//go:build linux

package overlay

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// noUsernsEnv marks the test binary started again by
// TestProbeSaysWhenUserNamespacesAreOff, inside its own namespace.
const noUsernsEnv = "TROUPE_OVERLAY_TEST_NO_USERNS"

// TestProbeSaysWhenUserNamespacesAreOff: where this user may make no
// user namespace, the probe fails saying so (callers fall back to a
// checkout with that note), rather than with a bare errno. The test
// binary runs again in a user namespace of its own whose limit of user
// namespaces it sets to 0 (user.max_user_namespaces is per namespace:
// the machine's is untouched).
func TestProbeSaysWhenUserNamespacesAreOff(t *testing.T) {
	if os.Getenv(noUsernsEnv) == "1" {
		if err := os.WriteFile("/proc/sys/user/max_user_namespaces", []byte("0"), 0); err != nil {
			t.Fatal(err)
		}
		_, err := Shared(t.TempDir())
		if !errors.Is(err, ErrNoUserNamespaces) || !strings.Contains(err.Error(), "overlay worktrees unavailable") {
			t.Fatalf("the probe says %v", err)
		}
		t.Log(err)
		return
	}
	need(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), exe, "-test.run=^TestProbeSaysWhenUserNamespacesAreOff$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), noUsernsEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
}
