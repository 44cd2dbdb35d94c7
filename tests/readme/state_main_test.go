package readme

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
)

// TestMain keeps the state directories of the runs the tests start in a
// temporary XDG_STATE_HOME, never in the real home, and removes the
// binaries the README's build line made for the repository's tests. The
// README's lines run in clones (repoSession), never in the source tree:
// the tests fail when something appeared there while they ran.
func TestMain(m *testing.M) {
	cleanup := testfiles.PrivateState()
	root := "../.."
	tree := testfiles.TreeState(root)
	code := m.Run()
	cleanup()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	if left := testfiles.LeftInTree(root, tree); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the source tree changed while the tests ran (theirs, or a package's tested beside them):\n  %s\n",
			strings.Join(left, "\n  "))
		code = 1
	}
	os.Exit(code)
}
