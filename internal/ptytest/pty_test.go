package ptytest

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/troupe-ai/troupe/internal/peer"
)

// A child process writing to the terminal side is on a terminal of the
// size set, and the test reads what it wrote.
func TestPTY(t *testing.T) {
	p, err := Open(77, 19)
	if err != nil {
		peer.Missing(t, "pty", "no pseudo-terminals here: %v", err)
	}
	defer p.Close()
	if _, err := unix.IoctlGetTermios(int(p.TTY.Fd()), unix.TCGETS); err != nil {
		t.Fatalf("the terminal side is not a terminal: %v", err)
	}
	cmd := exec.Command("sh", "-c", `[ -t 1 ] && echo "tty $(stty size <&2)"`)
	cmd.Stdout, cmd.Stderr = p.TTY, p.TTY
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.CloseTTY(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sh: %v (%q)", err, p.Output())
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the output never ended")
	}
	if got := p.Output(); !strings.Contains(got, "tty 19 77\r\n") {
		t.Errorf("output %q", got)
	}
}
