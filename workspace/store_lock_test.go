package workspace

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/peer"
)

// holdStoreLock has another process (python's fcntl.lockf: a POSIX
// record lock, as a node sharing the store holds while a task of its
// uses it) hold the store's lock read-locked, and returns its release.
func holdStoreLock(t *testing.T, path string) func() {
	t.Helper()
	peer.Need(t, "python3")
	cmd := exec.Command("python3", "-c", `import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.lockf(fd, fcntl.LOCK_SH)
print("held", flush=True)
sys.stdin.read()`, path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "held" {
		_ = cmd.Wait()
		t.Fatalf("the other process did not take the lock: %q %v %s", line, err, stderr.String())
	}
	release := func() {
		in.Close()
		_ = cmd.Wait()
	}
	t.Cleanup(release)
	return release
}

// A store another process uses is not tidied: the tidy does nothing
// until that use ends. A use in this process does the same, and a tidy
// of one Repo of the store is kept off by a use through another.
func TestStoreTidyWaitsForEveryUser(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	data := filepath.Join(t.TempDir(), "data")
	open := func() *StoreKeeper {
		r, err := OpenStore(ctx, data, "", 0)
		must(t, err)
		return r.Keeper("", DefaultStoreBounds)
	}
	k, other := open(), open()
	release := holdStoreLock(t, k.useLock())
	if tidy, err := k.Tidy(ctx, true); err != nil || !tidy.Busy {
		t.Fatalf("a tidy while another process uses the store: %+v %v", tidy, err)
	}
	release()
	use, err := other.Use()
	must(t, err)
	if tidy, err := k.Tidy(ctx, true); err != nil || !tidy.Busy {
		t.Fatalf("a tidy while another Repo of the store uses it: %+v %v", tidy, err)
	}
	use()
	use() // a second release is none
	if tidy, err := k.Tidy(ctx, true); err != nil || tidy.Busy || !tidy.Git {
		t.Fatalf("a tidy of the store no one uses: %+v %v", tidy, err)
	}
}
