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
