//go:build linux

package actors_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/overlay"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/messages"
)

// A worker in an overlay worktree (agent.worktrees: overlay, or auto): its shell
// commands and its file tools see one tree (the shell reads what
// write_file wrote, the tools edit what the shell made), its commands run
// on the overlay at the mount point, its own git sees its changes, and
// everything lands in the workspace.
func TestOverlayWorkerShellAndToolsLand(t *testing.T) {
	if _, err := overlay.Shared(filepath.Join(os.TempDir(), "troupe-actors-overlay-test")); err != nil {
		peer.Missing(t, "overlay mounts", "%v", err)
	}
	for _, wk := range []string{"overlay", "auto"} { // auto: an overlay where the probe passes, as here
		t.Run(wk, func(t *testing.T) {
			ws := gitRepo(t, map[string]string{"g.go": "package p\n\nvar G = 1\n"})
			res := loneWorkerRunIn(t, ws, wk, 0,
				calls(tc("write_file", `{"path":"tool.txt","content":"from the tools\n"}`)),
				calls(tc("shell", `{"command":"cat tool.txt > seen.txt && echo from the shell > made.txt && findmnt -n -o FSTYPE -T . > fstype.txt && git status --porcelain -- tool.txt > status.txt"}`)),
				calls(tc("read_file", `{"path":"made.txt"}`), tc("read_file", `{"path":"g.go"}`)),
				calls(tc("edit_file", `{"path":"made.txt","old_string":"from the shell","new_string":"from the shell, edited"}`),
					tc("edit_file", `{"path":"g.go","old_string":"G = 1","new_string":"G = 2"}`)),
				say("done"),
			)
			if len(res.Changes) != 1 || res.Changes[0].Status != messages.ChangeStatusApplied {
				t.Fatalf("changes %+v, want one applied", res.Changes)
			}
			for f, want := range map[string]string{
				"seen.txt":   "from the tools\n",
				"made.txt":   "from the shell, edited\n",
				"fstype.txt": "overlay\n",
				"status.txt": "?? tool.txt\n",
				"g.go":       "package p\n\nvar G = 2\n",
			} {
				if b, err := os.ReadFile(filepath.Join(ws, f)); err != nil || string(b) != want {
					t.Errorf("%s in the workspace: %q, %v; want %q", f, b, err, want)
				}
			}
			if out, err := exec.Command("git", "-C", ws, "status", "--porcelain").Output(); err != nil ||
				!strings.Contains(string(out), "?? seen.txt") || strings.Contains(string(out), ".troupe") {
				t.Errorf("git status in the workspace: %q, %v", out, err)
			}
		})
	}
}
