package cluster

import (
	"os"
	"testing"

	"github.com/troupe-ai/troupe/internal/natstest"
	"github.com/troupe-ai/troupe/internal/testfiles"
)

// TestMain keeps the state directories of the runs the tests start in a
// temporary XDG_STATE_HOME, never in the real home. In a server process
// of a natstest cluster (BenchmarkHubTasks) it runs that server.
func TestMain(m *testing.M) {
	natstest.ServeIfChild()
	os.Exit(testfiles.RunPrivate(m))
}
