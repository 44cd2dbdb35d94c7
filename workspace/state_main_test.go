package workspace

import (
	"os"
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// TestMain serves as the sandbox's launcher when a filter is run
// confined (filter_confined.go), and keeps troupe's git homes (beside
// the state directory) in a temporary XDG_STATE_HOME, never in the real
// home.
// TestWorktreesEnv names the environment variable that picks the suite's
// worktree kind.
const TestWorktreesEnv = "TROUPE_TEST_WORKTREES"

func TestMain(m *testing.M) {
	sandbox.MaybeRunLauncher()
	if len(os.Args) > 1 && os.Args[1] == revProcessArg {
		os.Exit(revProcessFilter())
	}
	// TROUPE_TEST_WORKTREES=overlay|checkout|auto runs the suite with
	// that worktree kind (tests/run.sh runs it again with overlays).
	SetDefaultWorktrees(os.Getenv(TestWorktreesEnv))
	os.Exit(testfiles.RunPrivate(m))
}
