//go:build linux

package testfiles

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/troupe-ai/troupe/internal/procsec"
)

// Nobody is the unprivileged user AsNobody runs tests as.
const Nobody = 65534

// NoDumpEnv=1 among AsNobody's env makes the tests run again
// non-dumpable, as the orchestrator and the node make themselves
// (procsec.NoDump), in a test binary whose TestMain calls
// NoDumpWhenAsked.
const NoDumpEnv = "TROUPE_TEST_NODUMP"

// NoDumpWhenAsked makes this process non-dumpable when NoDumpEnv is 1;
// call it in TestMain after the re-executions' hooks.
func NoDumpWhenAsked() {
	if os.Getenv(NoDumpEnv) == "1" {
		_ = procsec.NoDump()
	}
}

// AsNobody runs the tests of this test binary that match the -test.run
// pattern run again, as the user nobody (65534:65534, no supplementary
// groups), in a directory that user owns (its working directory, TMPDIR,
// HOME and state directory), with env added, and fails t with their
// output when they fail or match nothing. Tests skipped there skip t,
// or fail it under CI=true. A process that is not root is already
// unprivileged: its own run of the tests is the unprivileged one, and t
// is skipped.
func AsNobody(t *testing.T, run string, env ...string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("not root: the package's tests already run unprivileged")
	}
	dir, err := os.MkdirTemp("", "troupe-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	state := filepath.Join(dir, "troupe-state-nobody")
	bin := filepath.Join(dir, "test.bin") // the build directory may be closed to others
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := copyExecutable(bin); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, state, bin} {
		if err := os.Chown(p, Nobody, Nobody); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "-test.run="+run, "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + dir, "HOME=" + dir, "XDG_STATE_HOME=" + state,
		"CI=" + os.Getenv("CI")}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody, Groups: []uint32{}},
		Pdeathsig:  syscall.SIGKILL,
	}
	out, err := cmd.CombinedOutput()
	switch {
	case err != nil:
		t.Fatalf("as nobody: %v\n%s", err, out)
	case !strings.Contains(string(out), "--- PASS") && !strings.Contains(string(out), "--- SKIP"):
		t.Fatalf("as nobody: no test matched %s\n%s", run, out)
	case strings.Contains(string(out), "--- SKIP"):
		if os.Getenv("CI") == "true" {
			t.Fatalf("as nobody: skipped\n%s", out)
		}
		t.Skipf("as nobody: skipped\n%s", out)
	}
	t.Logf("as nobody:\n%s", out)
}

// copyExecutable copies this process's executable to the new file to.
func copyExecutable(to string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	src, err := os.Open(exe)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
