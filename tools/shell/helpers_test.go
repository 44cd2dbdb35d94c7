package shell

import (
	"encoding/json"
	"fmt"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools/toolstest"
)

// The shared test helpers under the names the tests were written with.
var (
	golden         = toolstest.Golden
	newTestSession = toolstest.NewSession
	writeFile      = toolstest.WriteFile
	runTool        = toolstest.RunTool
	patchFile      = toolstest.ReadFile
)

// calls builds tool calls from name, arguments pairs.
func calls(pairs ...string) []messages.ToolCall {
	var out []messages.ToolCall
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, messages.ToolCall{ID: fmt.Sprintf("c%d", i/2), Name: pairs[i], Args: json.RawMessage(pairs[i+1])})
	}
	return out
}
