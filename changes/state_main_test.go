package changes

import (
	"os"
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
)

// TestMain keeps the state directories the tests' runs make in a
// temporary XDG_STATE_HOME, never in the real home.
func TestMain(m *testing.M) {
	os.Exit(testfiles.RunPrivate(m))
}
