//go:build linux

package workspace

import (
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
)

// TestOverlayWorktreesAsNobody: overlay worktrees made, written by
// troupe and by commands entered in them, captured, landed, kept and
// reused, as a user who is not root (troupe's users are not), in a
// directory that user owns: the workspace tests of overlays run again
// as nobody.
func TestOverlayWorktreesAsNobody(t *testing.T) {
	testfiles.AsNobody(t, "^(TestOverlayWorktreeCapturesAndLands|TestOverlayWorkersNeverMeet|TestOverlayKeepOutlivesTheMount|"+
		"TestOverlayCaptureFollowsWhatWasTouched|TestReusedWorktreeHoldsTheNewSnapshot|TestRestoreUndoesEveryKindOfEdit|"+
		"TestWorktreeCleanupNeverFollowsASymlink)$", TestWorktreesEnv+"="+WorktreesOverlay)
}
