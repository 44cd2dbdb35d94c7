//go:build linux

package sandbox

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
)

// TestMain serves as the launcher when Confine re-executes this binary,
// and as the helper programs the tests run confined (helperEnv names one).
func TestMain(m *testing.M) {
	MaybeRunLauncher()
	testfiles.NoDumpWhenAsked()
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(runHelper(h, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helperEnv selects a helper: ptrace PID, connect ADDR, mount DIR.
const helperEnv = "SANDBOX_TEST_HELPER"

func runHelper(name string, args []string) int {
	var err error
	switch name {
	case "ptrace":
		pid, _ := strconv.Atoi(args[0])
		err = syscall.PtraceAttach(pid)
	case "connect":
		var c net.Conn
		if c, err = net.Dial("tcp", args[0]); err == nil {
			_ = c.Close()
		}
	case "mount":
		err = syscall.Mount("tmpfs", args[0], "tmpfs", 0, "")
	case "unshare":
		err = syscall.Unshare(syscall.CLONE_NEWUSER)
	default:
		err = fmt.Errorf("no helper %q", name)
	}
	if err != nil {
		fmt.Println(name+":", err)
		return 1
	}
	fmt.Println(name + ": ok")
	return 0
}
