package workspace

import (
	"os"
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
)

// TestMain keeps troupe's git homes (beside the state directory) in a
// temporary XDG_STATE_HOME, never in the real home.
func TestMain(m *testing.M) {
	os.Exit(testfiles.RunPrivate(m))
}
