package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// A kind listed in Settings.Commit (sandbox.commit) may commit in a
// worktree of its own: its commands may also write the worktree's own
// administrative folder in the repository (its HEAD, index and logs) and
// the repository's objects. Nothing else of the repository: its config,
// hooks, info, refs and the other worktrees stay out of reach, and so do
// the administrative files that say where the worktree's repository is
// (gitdir, commondir, config.worktree), kept read-only. A workspace that
// is not a worktree (its .git a folder) gets nothing more: agents commit
// only in a worktree of their own. Without mount namespaces (Landlock
// alone) the administrative folder's own entries cannot be created, so
// a commit fails there as before.

// commitAccess is what policy p of an agent in workspace gains to commit:
// the trees to write and the files beneath them to keep read-only; none
// when workspace is no worktree or its .git file does not lead to a
// worktree's folder of a repository.
func commitAccess(workspace, view string) (writable, readOnly []string) {
	data, err := os.ReadFile(filepath.Join(view, ".git")) // workspace's, as this process reaches it
	if err != nil {
		return nil, nil // a folder, or none: not a worktree
	}
	admin, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok {
		return nil, nil
	}
	if !filepath.IsAbs(admin) {
		admin = filepath.Join(workspace, admin)
	}
	admin = filepath.Clean(admin)
	common := filepath.Dir(filepath.Dir(admin))
	if filepath.Base(filepath.Dir(admin)) != "worktrees" {
		return nil, nil
	}
	for _, need := range []string{filepath.Join(admin, "HEAD"), filepath.Join(common, "objects")} {
		if _, err := os.Stat(need); err != nil {
			return nil, nil
		}
	}
	ro := []string{filepath.Join(admin, "gitdir"), filepath.Join(admin, "commondir"), filepath.Join(admin, "config.worktree")}
	return []string{admin, filepath.Join(common, "objects")}, ro
}
