package cluster

import (
	"github.com/troupe-ai/troupe/tools/sandbox"
	ws "github.com/troupe-ai/troupe/workspace"
	"os"
	"testing"

	"github.com/troupe-ai/troupe/internal/natstest"
	"github.com/troupe-ai/troupe/internal/testfiles"
)

// TestMain keeps the state directories of the runs the tests start in a
// temporary XDG_STATE_HOME, never in the real home. In a server process
// of a natstest cluster (BenchmarkHubTasks) it runs that server.
func TestMain(m *testing.M) {
	// The overlay holder and the sandbox's launcher and forker are this
	// binary again; TROUPE_TEST_WORKTREES=overlay|checkout|auto runs the
	// suite with that kind of worktree (a checkout when unset).
	sandbox.MaybeRunLauncher()
	ws.SetDefaultWorktrees(os.Getenv("TROUPE_TEST_WORKTREES"))
	natstest.ServeIfChild()
	os.Exit(testfiles.RunPrivate(m))
}
