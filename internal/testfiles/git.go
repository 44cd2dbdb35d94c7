package testfiles

import (
	"os/exec"
	"strings"
	"testing"
)

// Git runs git with args in dir for a test, with a fixed identity and
// main as the initial branch, and returns its output, trimmed; a failure
// ends the test with git's output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}
