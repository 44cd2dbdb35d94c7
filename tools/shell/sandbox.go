package shell

import (
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// sandboxKey is the key of the session's sandbox box (owned: closed, and
// its private TMPDIR removed, when the session closes).
type sandboxKey struct{}

// UseSandbox makes the commands of session s start confined by box; the
// session owns it from then on and closes it with the session. A nil box
// leaves the commands unconfined.
func UseSandbox(s *tools.Session, box *sandbox.Box) {
	if box == nil {
		return
	}
	_, _ = tools.State(s, sandboxKey{}, func() *sandbox.Box { return box })
}
