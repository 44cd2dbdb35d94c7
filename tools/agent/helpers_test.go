package agent

import (
	"strings"

	"github.com/troupe-ai/troupe/tools/toolstest"
)

// The shared test helpers under the names the tests were written with.
var (
	golden         = toolstest.Golden
	newTestSession = toolstest.NewSession
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }
