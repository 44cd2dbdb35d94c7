//go:build linux

package overlay_test

import (
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
)

// TestHolderMountsAsNobody: the holder, its mounts by descriptor, the
// views and commands entered in them, and the attacks refused, as a
// user who is not root (troupe's users are not), on a directory that
// user owns.
func TestHolderMountsAsNobody(t *testing.T) {
	testfiles.AsNobody(t, "^(TestViewAndCommandSeeOneTree|TestAttacksLeaveLowerAndOthers|TestTwoWorkersEditingOneFile|TestSwappedComponentsNeverMountOutside|TestEnteredCommandCannotTouchOtherMounts)$")
}
