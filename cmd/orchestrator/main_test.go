package main

import (
	"os"
	"testing"

	"github.com/troupe-ai/troupe/tools/sandbox"
)

// TestMain serves as the sandbox's launcher when a confined command is
// started through it (network deny or loopback re-executes this binary).
func TestMain(m *testing.M) {
	sandbox.MaybeRunLauncher()
	os.Exit(m.Run())
}
