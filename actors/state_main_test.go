package actors

import (
	"github.com/troupe-ai/troupe/tools/sandbox"
	"github.com/troupe-ai/troupe/workspace"
	"os"
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
)

// TestMain keeps the state directories of the runs the tests start in a
// temporary XDG_STATE_HOME, never in the real home.
func TestMain(m *testing.M) {
	// The overlay holder and the sandbox's launcher and forker are this
	// binary again; TROUPE_TEST_WORKTREES=overlay|checkout|auto runs the
	// suite with that kind of worktree (a checkout when unset).
	sandbox.MaybeRunLauncher()
	workspace.SetDefaultWorktrees(os.Getenv("TROUPE_TEST_WORKTREES"))
	os.Exit(testfiles.RunPrivate(m))
}
