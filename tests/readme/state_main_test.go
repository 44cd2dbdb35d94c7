package readme

import (
	"os"
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
)

// TestMain keeps the state directories of the runs the tests start in a
// temporary XDG_STATE_HOME, never in the real home, and removes the
// binaries the README's build line made for the repository's tests.
func TestMain(m *testing.M) {
	cleanup := testfiles.PrivateState()
	code := m.Run()
	cleanup()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}
