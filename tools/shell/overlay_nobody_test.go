//go:build linux

package shell

import (
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
)

// TestOverlayShellAsNobody: the overlay shell tests as a user who is not
// root (troupe's users are not), non-dumpable as the orchestrator is:
// an entered command is confined by a launcher the forker starts, which
// binds .git read-only and leaves the tree's top writable (issue 30: it
// held no capability to bind, and split the writes around .git instead).
func TestOverlayShellAsNobody(t *testing.T) {
	testfiles.AsNobody(t, "^(TestOverlayShellAndToolsSeeOneTree|TestOverlaySandboxHolds)$", testfiles.NoDumpEnv+"=1")
}
