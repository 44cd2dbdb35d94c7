package shell

import (
	"os/exec"
	"slices"

	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/procguard"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// The keys of the session's sandbox box: attached, for the shell tools to
// find it, and owned, so the session closes it (removing its private
// TMPDIR) when it closes.
type (
	sandboxKey      struct{} // *sandbox.Box, attached for lookup
	sandboxOwnedKey struct{} // the same box, owned: closed with the session
)

// UseSandbox makes the commands of session s start confined by box; the
// session owns it from then on and closes it with the session. A nil box
// leaves the commands unconfined.
func UseSandbox(s *tools.Session, box *sandbox.Box) {
	if box == nil {
		return
	}
	s.Attach(sandboxKey{}, box)
	_, _ = tools.State(s, sandboxOwnedKey{}, func() *sandbox.Box { return box })
}

// sandboxOf is the session's sandbox box, nil when it has none.
func sandboxOf(s *tools.Session) *sandbox.Box {
	b, _ := s.Attached(sandboxKey{}).(*sandbox.Box)
	return b
}

// starterOf starts the session's commands in its sandbox; nil (no
// sandbox) lets the process guard start them plainly. In a workspace
// whose commands enter it first (tools.Workspace.Enter: an overlay
// worktree), each command starts through the enter prefix at its
// directory, and the sandbox is made after entering.
func starterOf(s *tools.Session) func(*exec.Cmd) error {
	b := sandboxOf(s)
	ws := s.Workspace
	if ws == nil || ws.Enter(ws.Root()) == nil {
		if b != nil {
			return b.Start
		}
		return nil
	}
	return func(c *exec.Cmd) error {
		dir := c.Dir
		if dir == "" {
			dir = ws.Root()
		}
		pre := ws.Enter(dir)
		if b != nil {
			return b.StartEntered(c, pre)
		}
		if c.Err != nil {
			return c.Start()
		}
		c.Args = append(append(slices.Clone(pre), c.Path), c.Args[min(1, len(c.Args)):]...)
		c.Path, c.Dir = pre[0], ""
		return procguard.StartPlain(c)
	}
}
