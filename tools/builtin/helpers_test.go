package builtin

import (
	"strings"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools/toolstest"
)

// The shared test helpers under the names the tests were written with.
var (
	golden         = toolstest.Golden
	newTestSession = toolstest.NewSession
	writeFile      = toolstest.WriteFile
)

type noParams struct{}

func names(specs []messages.ToolSpec) string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return strings.Join(out, ",")
}
