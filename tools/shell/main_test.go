package shell

import (
	"os"
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// TestMain serves as the sandbox's launcher (and the overlay holder and
// the forker of commands that enter an overlay first) when the tests
// re-execute this binary as one.
func TestMain(m *testing.M) {
	sandbox.MaybeRunLauncher()
	testfiles.NoDumpWhenAsked()
	os.Exit(testfiles.RunPrivate(m))
}
