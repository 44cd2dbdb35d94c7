package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxDeadIndex bounds the index of a dead worktree Prune copies (its
// stat data spare git hashing every file again).
const maxDeadIndex = 64 << 20

// captureDead captures the dead worktree at work (below parent: a
// checkout, or an overlay's upper directory) into k: its patch kept
// under the run killed-<pid>. whole says its files must be kept too.
func (r *Repo) captureDead(ctx context.Context, parent *dirFD, work string, upper bool, admin, pid string, k *KeptWork) (bool, error) {
	if deadParked(admin) {
		return false, nil // troupe's own, being prepared for reuse: no agent's work
	}
	commit := deadSnapshot(admin)
	if commit == "" {
		return true, errors.New("its snapshot is not known")
	}
	tree, err := r.home.git().line(ctx, "rev-parse", "--verify", "--quiet", commit+"^{tree}")
	if err != nil {
		return true, fmt.Errorf("its snapshot %.12s is gone: %w", commit, err)
	}
	top, err := parent.sub(work, false)
	if err != nil {
		return true, err
	}
	defer top.close()
	scan, err := scanDead(top, upper, r.maxChange())
	if err != nil {
		return true, err
	}
	for _, p := range scan.removed {
		k.Left = append(k.Left, p+": not a file git tracks, removed")
	}
	dir := filepath.Join(r.worktreesDir(), work)
	adm, err := r.register(dir, commit, false)
	if err != nil {
		return true, err
	}
	defer removeAtomically(adm, r.home.tmpDir())
	w := &Worktree{repo: r, dir: dir, snap: Snapshot{Commit: commit, Tree: tree}}
	w.g = r.worktreeGit(adm, anchorPath(top, dir), dir)
	idx, done, err := r.tempIndex()
	if err != nil {
		return true, err
	}
	defer done()
	g := w.g.withIndex(idx)
	if err := r.deadIndex(ctx, g, tree, admin, upper, scan); err != nil {
		return true, err
	}
	cs, left, err := w.salvageIn(ctx, g, scan.over...)
	if err != nil {
		return true, err
	}
	for _, p := range scan.over {
		k.Left = append(k.Left, fmt.Sprintf("%s: %d bytes, over agent.max_change_bytes", p, scan.sizes[p]))
	}
	k.Left = append(k.Left, left...)
	whole := len(scan.over) > 0 || len(left) > 0
	if len(cs.Files) == 0 {
		return whole, nil
	}
	k.Snapshot = commit
	for _, f := range cs.Files {
		k.Files = append(k.Files, f.Path)
	}
	if k.Patch, err = r.KeepChangeset(ctx, "killed-"+pid, k.Agent, w.snap, cs); err != nil {
		return true, err
	}
	return whole, nil
}

// deadIndex fills the index of g with the snapshot's tree: a
// checkout's own index where it can (read-tree -m keeps the stat data
// of the entries that match, so git add hashes only what changed); for
// an upper directory, the snapshot's files the agent did not touch
// marked skip-worktree (git add leaves them as they are, and reads a
// .gitignore among them from the index) and those it removed dropped.
func (r *Repo) deadIndex(ctx context.Context, g git, tree, admin string, upper bool, scan *deadScan) error {
	if !upper && admin != "" {
		if data, err := readBeneath(admin, "index", maxDeadIndex); err == nil {
			if err := os.WriteFile(g.index, data, 0o600); err == nil {
				if _, err := g.run(ctx, nil, "read-tree", "-m", tree); err == nil {
					return nil
				}
			}
			os.Remove(g.index)
		}
	}
	if _, err := g.run(ctx, nil, "read-tree", tree); err != nil || !upper {
		return err
	}
	out, err := g.run(ctx, nil, "ls-files", "-z")
	if err != nil {
		return err
	}
	var gone, untouched bytes.Buffer
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		switch g, u := scan.lowerEntry(string(rec)); {
		case g:
			gone.Write(append(rec, 0))
		case u:
			untouched.Write(append(rec, 0))
		}
	}
	if gone.Len() > 0 {
		if _, err := g.run(ctx, gone.Bytes(), "update-index", "-z", "--force-remove", "--stdin"); err != nil {
			return err
		}
	}
	if untouched.Len() > 0 {
		if _, err := g.run(ctx, untouched.Bytes(), "update-index", "-z", "--skip-worktree", "--stdin"); err != nil {
			return err
		}
	}
	return nil
}

// deadSnapshot is the snapshot commit the dead worktree whose git
// directory is admin was made from: its snapshot file, else its HEAD.
func deadSnapshot(admin string) string {
	if admin == "" {
		return ""
	}
	for _, name := range []string{snapshotFile, "HEAD"} {
		data, err := readBeneath(admin, name, 256)
		if s := strings.TrimSpace(string(data)); err == nil && (len(s) == 40 || len(s) == 64) && isHex(s) {
			return s
		}
	}
	return ""
}

// deadParked reports whether the dead worktree whose git directory is
// admin was parked for reuse (parkedFile).
func deadParked(admin string) bool {
	if admin == "" {
		return false
	}
	_, err := readBeneath(admin, parkedFile, 64)
	return err == nil
}

// isHex reports whether s is lower-case hexadecimal.
func isHex(s string) bool {
	return strings.Trim(s, "0123456789abcdef") == ""
}

// deadAdmins maps the names of the dead worktrees in the Repo's
// worktrees directory to their git directories in the home.
func (r *Repo) deadAdmins() map[string]string {
	dir := filepath.Join(r.home.dir, "worktrees")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for _, e := range entries {
		if !deadOwner(e.Name()) {
			continue
		}
		admin := filepath.Join(dir, e.Name())
		data, err := readBeneath(admin, "gitdir", 4096)
		if err != nil {
			continue
		}
		wt := filepath.Dir(strings.TrimSpace(string(data)))
		if filepath.Dir(wt) == r.worktreesDir() {
			m[filepath.Base(wt)] = admin
		}
	}
	return m
}

// pruneRecords removes the git directories and temporary files of
// processes no longer running from the home.
func (r *Repo) pruneRecords() error {
	if err := dropDeadRecords(filepath.Join(r.home.dir, "worktrees"), r.home.tmpDir()); err != nil {
		return fmt.Errorf("prune worktrees: %w", err)
	}
	entries, err := os.ReadDir(r.home.tmpDir())
	if err != nil {
		return fmt.Errorf("prune worktrees: %w", err)
	}
	for _, e := range entries {
		if deadOwner(e.Name()) {
			if err := os.RemoveAll(filepath.Join(r.home.tmpDir(), e.Name())); err != nil {
				return fmt.Errorf("prune worktrees: %w", err)
			}
		}
	}
	return nil
}
