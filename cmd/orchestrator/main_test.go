package main

import (
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"os"
	"testing"

	"github.com/troupe-ai/troupe/tools/sandbox"
)

// TestMain serves as the sandbox's launcher when a confined command is
// started through it (network deny or loopback re-executes this binary).
func TestMain(m *testing.M) {
	sandbox.MaybeRunLauncher()
	cleanup := testfiles.PrivateState() // state directories in a temporary XDG_STATE_HOME
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// stateDirOf is the state directory runs in ws keep their state in (the
// tests' temporary XDG_STATE_HOME, see TestMain).
func stateDirOf(t testing.TB, ws string) string {
	t.Helper()
	dir, err := actors.StateDir(ws)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
