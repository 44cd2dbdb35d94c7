package web

import "github.com/troupe-ai/troupe/tools/toolstest"

// The shared test helpers under the names the tests were written with.
var newTestSession = toolstest.NewSession
