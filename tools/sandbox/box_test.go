//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A box gives its commands a private TMPDIR they may write, removed by
// Close.
func TestBoxTempDir(t *testing.T) {
	needKernel(t)
	b := newBox(t)
	box := NewBox(b.pol, Check(), t.TempDir())
	cmd := exec.Command("sh", "-c", `echo hi > "$TMPDIR/f" && cat "$TMPDIR/f" && echo "$TMPDIR"`)
	cmd.Dir = b.ws
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := box.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || lines[0] != "hi" {
		t.Fatalf("output %q", out.String())
	}
	if err := box.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lines[1]); !os.IsNotExist(err) {
		t.Errorf("TMPDIR %s still there: %v", lines[1], err)
	}
	if err := box.Start(exec.Command("true")); !errors.Is(err, ErrClosed) {
		t.Errorf("start after close: %v", err)
	}
}

// boxRun runs argv in box and returns its output.
func boxRun(t *testing.T, box *Box, dir string, argv ...string) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := box.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	return strings.TrimSpace(out.String())
}

// With network deny or loopback, a box's commands share one network
// namespace, not the host's: a server one command starts is reachable by
// the next.
func TestBoxSharesNetworkNamespace(t *testing.T) {
	needKernel(t)
	b := newBox(t)
	host, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []Network{NetworkDeny, NetworkLoopback} {
		pol := b.pol
		pol.Network = mode
		box := NewBox(pol, Check(), t.TempDir())
		first := boxRun(t, box, b.ws, "readlink", "/proc/self/ns/net")
		second := boxRun(t, box, b.ws, "readlink", "/proc/self/ns/net")
		if first == host || first != second {
			t.Errorf("%s: host %s, first %s, second %s", mode, host, first, second)
		}
		other := NewBox(pol, Check(), t.TempDir())
		if third := boxRun(t, other, b.ws, "readlink", "/proc/self/ns/net"); third == first {
			t.Errorf("%s: two boxes share %s", mode, third)
		}
		for _, bx := range []*Box{box, other} {
			if err := bx.Close(); err != nil {
				t.Error(err)
			}
		}
	}
}
