package procsec

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// readParentEnviron is a command that prints its parent's environment as
// /proc shows it (the environment the parent started with).
const readParentEnviron = `cat /proc/$PPID/environ 2>&1 | tr '\0' '\n'`

// A process that is non-dumpable and starts its commands with Start
// hides its environment from a command it
// runs, even as root, whose CAP_SYS_PTRACE (or CAP_SYS_ADMIN, or
// CAP_PERFMON) would otherwise pass the non-dumpable check. As a control,
// the same process starting it with cmd.Start does not, as root. Both run in
// re-runs of the test binary, started with a canary in their environment.
// Without the capabilities (an ordinary user) there is nothing to drop and
// NoDump alone holds (TestNoDump, the shell tests).
func TestChildrenCannotReadOurEnvironAsRoot(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	if mode := os.Getenv("PROCSEC_INSPECT_CHILD"); mode != "" {
		if err := NoDump(); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", "-c", readParentEnviron)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		start := cmd.Start
		if mode == "drop" {
			start = func() error { return Start(cmd) }
		}
		if err := start(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if strings.Contains(out.String(), "PROCSEC_CANARY=") {
			t.Fatalf("the child read our environment")
		}
		return
	}
	if may, _ := ChildrenMayInspect(); !may {
		t.Skip("this process holds none of the capabilities to drop (not root): nothing to test")
	}
	child := func(mode string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestChildrenCannotReadOurEnvironAsRoot$", "-test.v")
		cmd.Env = append(os.Environ(), "PROCSEC_INSPECT_CHILD="+mode, "PROCSEC_CANARY=sk-canary-value")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := child("drop"); err != nil || !strings.Contains(out, "--- PASS") {
		t.Fatalf("with the capabilities dropped: %v\n%s", err, out)
	}
	if out, _ := child("nodump-only"); !strings.Contains(out, "the child read our environment") {
		t.Errorf("control: NoDump alone kept a root child out, so this test shows nothing:\n%s", out)
	}
}
