//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/rs/zerolog"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/internal/testfiles"
)

// fallbackStageEnv marks the test binary started again by
// TestHolesFallbackIsSaidOnce: "userns" in a user namespace of its own,
// "nobody" as nobody in it.
const fallbackStageEnv = "TROUPE_SANDBOX_FALLBACK_STAGE"

// TestHolesFallbackIsSaidOnce: as nobody where no user namespace can be
// made (the test binary runs again in a user namespace of its own whose
// limit of user namespaces it sets to 0, then as nobody there), commands
// get no mount namespace, so .git is kept read-only by Landlock's split
// grants: that is said once per process, with why, on the sandbox's
// logger, however many commands take it; HolesFallback and Check say it
// too; and .git stays read-only.
func TestHolesFallbackIsSaidOnce(t *testing.T) {
	switch os.Getenv(fallbackStageEnv) {
	case "nobody":
		fallbackAsNobody(t)
		return
	case "userns":
		if err := os.WriteFile("/proc/sys/user/max_user_namespaces", []byte("0"), 0); err != nil {
			t.Fatal(err)
		}
		testfiles.AsNobody(t, "^TestHolesFallbackIsSaidOnce$", fallbackStageEnv+"=nobody")
		return
	}
	if os.Getuid() != 0 {
		t.Skip("not root: cannot map nobody into a user namespace of this test's")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), exe, "-test.run=^TestHolesFallbackIsSaidOnce$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fallbackStageEnv+"=userns")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}},
		GidMappingsEnableSetgroups: true,
	}
	out, err := cmd.CombinedOutput()
	switch {
	case err != nil:
		t.Fatalf("%v\n%s", err, out)
	case !strings.Contains(string(out), "--- PASS") && strings.Contains(string(out), "--- SKIP"):
		peer.Missing(t, "Landlock", "skipped in the user namespace:\n%s", out)
	case !strings.Contains(string(out), "--- PASS"):
		t.Fatalf("no test passed:\n%s", out)
	}
	t.Logf("%s", out)
}

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func fallbackAsNobody(t *testing.T) {
	logged := &lockedBuffer{}
	SetLogger(zerolog.New(logged))
	s := Check()
	if s.LandlockABI == 0 {
		peer.Missing(t, "Landlock", "the fallback keeps .git read-only by Landlock")
	}
	if s.MountNS || s.UserNS {
		t.Fatalf("as nobody with no user namespaces, the probe says: %+v", s)
	}
	if !strings.Contains(s.HolesFallback, "no mount namespaces") || !strings.Contains(s.String(), "kept by Landlock alone") {
		t.Errorf("Check says %q:\n%s", s.HolesFallback, s)
	}
	if logged.String() != "" {
		t.Fatalf("warned before any command: %s", logged)
	}
	writesBesideReadOnlyGit(t, s)
	if n := strings.Count(logged.String(), "kept read-only by Landlock alone"); n != 1 || !strings.Contains(logged.String(), "no mount namespaces") {
		t.Errorf("%d warnings, want 1 saying why:\n%s", n, logged)
	}
	if HolesFallback() == "" {
		t.Error("HolesFallback says nothing")
	}
	t.Logf("the warning: %s", logged)
}

// TestLauncherBindFallbackIsSaid: as nobody, with user namespaces, whose
// launchers get no capabilities in theirs (the bug of issue 30, brought
// back by a test hook), the launcher could not bind .git read-only: this
// process finds that out once, before its first such command, says so
// once with why, and starts its launchers splitting the grants; .git
// stays read-only.
func TestLauncherBindFallbackIsSaid(t *testing.T) {
	if os.Getenv(fallbackStageEnv) == "nocaps" {
		launcherCapsOff = true
		launcherFallbackAsNobody(t)
		return
	}
	testfiles.AsNobody(t, "^TestLauncherBindFallbackIsSaid$", fallbackStageEnv+"=nocaps")
}

func launcherFallbackAsNobody(t *testing.T) {
	logged := &lockedBuffer{}
	SetLogger(zerolog.New(logged))
	s := Check()
	if s.LandlockABI == 0 || !s.UserNS {
		peer.Missing(t, "user namespaces", "the launcher's fallback needs Landlock and user namespaces for nobody: %+v", s)
	}
	s.ThreadMountNS = false // nobody has none; said for clarity
	writesBesideReadOnlyGit(t, s)
	if n := strings.Count(logged.String(), "kept read-only by Landlock alone"); n != 1 || !strings.Contains(logged.String(), "could not bind") {
		t.Errorf("%d warnings, want 1 saying why:\n%s", n, logged)
	}
	if !strings.Contains(Check().HolesFallback, "could not bind") {
		t.Errorf("Check says %q", Check().HolesFallback)
	}
	t.Logf("the warning: %s", logged)
}

// writesBesideReadOnlyGit runs three commands under s in a workspace
// whose .git is read-only: two appends to .git/config (refused, the file
// unchanged) and a write in src (allowed).
func writesBesideReadOnlyGit(t *testing.T, s Support) {
	t.Helper()
	ws := t.TempDir()
	for _, d := range []string{".git", "src"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pol := Policy{Writable: []string{ws}, ReadOnly: []string{filepath.Join(ws, ".git")}, Network: NetworkAllow}
	for _, script := range []string{"echo x >> .git/config", "echo x >> .git/config", "echo y > src/a.txt"} {
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = ws
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := Start(cmd, pol, s); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if wrote := err == nil; wrote != strings.Contains(script, "src/") {
			t.Errorf("%s: %v\n%s", script, err, out.String())
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); string(b) != "[core]\n" {
		t.Errorf(".git/config became %q", b)
	}
}
