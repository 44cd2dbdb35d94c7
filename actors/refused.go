package actors

import (
	"errors"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
)

// refusedAnyway reports a call the executor will refuse whatever the user
// says: a tool this agent may not use now (its kind or its phase),
// arguments the tool does not accept, or a path outside the workspace. Such a call is not put to the user: the
// executor's refusal tells the model what to do instead.
func (a *agent) refusedAnyway(reg *tools.Registry, call messages.ToolCall) bool {
	if reg == nil {
		return false
	}
	t, ok := reg.Get(call.Name)
	if !ok {
		return true
	}
	if c, ok := t.(tools.ArgChecker); ok && c.CheckArgs(call.Args) != nil {
		return true
	}
	for _, p := range t.Paths(call.Args) {
		if _, err := a.rt.ws.Resolve(p); errors.Is(err, tools.ErrOutsideWorkspace) {
			return true
		}
	}
	return false
}
