//go:build linux

package sandbox

import (
	"os/exec"
	"sync/atomic"
	"testing"
)

// With Detect, the kernel is asked only when a box starts a command or
// Kernel is read, never when the settings or a box are made: a command
// that starts no process does not probe.
func TestSettingsDetectOnFirstCommand(t *testing.T) {
	needKernel(t)
	var asked atomic.Int32
	s := Settings{Detect: func() Support { asked.Add(1); return Check() }}
	b := newBox(t)
	box := s.Box(detectKind, b.ws)
	defer box.Close()
	if n := asked.Load(); n != 0 {
		t.Fatalf("asked the kernel %d times before any command", n)
	}
	cmd := exec.Command("true")
	cmd.Dir = b.ws
	if err := box.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("asked the kernel %d times for one command", n)
	}
	if s.Kernel().Seccomp != Check().Seccomp || asked.Load() != 2 {
		t.Errorf("Kernel did not ask Detect")
	}
}

// detectKind is any agent kind: the test's settings name none.
const detectKind = "worker"
