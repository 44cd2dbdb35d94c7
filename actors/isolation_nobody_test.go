//go:build linux

package actors_test

import (
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
)

// TestOverlayWorkerAsNobody: a whole run, the agent's worker in an
// overlay worktree, as a user who is not root (troupe's users are
// not), on a workspace that user owns: the overlay worker tests run
// again as nobody.
func TestOverlayWorkerAsNobody(t *testing.T) {
	testfiles.AsNobody(t, "^(TestOverlayWorkerShellAndToolsLand)$", "TROUPE_TEST_WORKTREES=overlay")
}
