package changes

import (
	"path/filepath"
	"strings"

	"github.com/troupe-ai/troupe/workspace"
)

// View says how the commands of an agent working in an overlay worktree
// see it: Inside, the worktree's root as they see it, and Enter, the argv
// prefix that starts a program there at dir (a path below Inside). A
// checkout's View is empty (Inside ""): its commands start in Root as
// they are. The tools reach Root itself as an opaque root
// (tools.NewWorkspaceView), never resolving it.
type View struct {
	Inside string
	Enter  func(dir string) []string
}

// View is how the agent's commands see its worktree.
func (iso *Isolated) View() View { return viewOf(iso.wt) }

// View is how the task's agent's commands see its worktree.
func (h *Hosted) View() View { return viewOf(h.wt) }

// viewOf is wt's View.
func viewOf(wt *workspace.Worktree) View {
	in := wt.Inside()
	if in == "" {
		return View{}
	}
	return View{Inside: in, Enter: func(dir string) []string {
		rel, err := filepath.Rel(in, dir)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
			rel = "" // the root (dir is the tools' own, always below it)
		}
		return wt.Enter(rel)
	}}
}
