package workspace

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strconv"
)

// errAgentGit: the agent moved the worktree's HEAD or changed its index,
// so the manifest no longer says what the index holds.
var errAgentGit = errors.New("the agent changed HEAD or the index")

// refreshAfter is how many files whose index stat data is stale a
// restore tolerates before it has git record their stat data again (one
// git update-index --refresh): each costs a hash at every capture.
const refreshAfter = 64

// restore brings a parked worktree back to what it held at handover, in
// Go: every new entry (ignored ones too) removed, every tracked file
// that differs rewritten from the snapshot's blob, nothing else touched.
// What differs is what the last capture found, when nothing was written
// in the worktree's tracked directories since (an inotify watch set
// before the capture's walk says; inotify does not see writes through a
// shared memory mapping, which an agent's process would have to make
// after its capture); otherwise one walk finds it.
// Its index is left as it is (it holds the snapshot's tree still; the
// stat data of rewritten files goes stale and they are hashed until git
// refreshes it). All writes and removals go through an os.Root, so a
// symlink the agent left cannot lead them out of the worktree. An agent
// that moved HEAD or changed the index gets errAgentGit (the caller
// resets the slow way).
func (w *Worktree) restore(ctx context.Context) error {
	m := w.hand
	defer m.forgetScan()
	if err := m.unchangedByAgent(); err != nil {
		return err
	}
	res := m.scanned
	if res == nil || !m.watch.quiet() {
		var err error
		if res, err = m.scan(w.at, false); err != nil {
			return err
		}
	}
	root, err := os.OpenRoot(w.at)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, f := range res.fresh {
		if err := root.RemoveAll(filepath.FromSlash(f.path)); err != nil {
			return fmt.Errorf("restore worktree: %w", err)
		}
	}
	for _, d := range res.deltas {
		e := m.file(d.path)
		if e == nil {
			return fmt.Errorf("restore worktree: %s not in the manifest", d.path)
		}
		_, data, err := w.repo.objects().read(ctx, hex.EncodeToString(e.id))
		if err != nil {
			return fmt.Errorf("restore worktree: %w", err)
		}
		if err := rootWrite(root, d.path, e.mode, data); err != nil {
			return fmt.Errorf("restore worktree: %w", err)
		}
	}
	if res.rehashed+len(res.deltas) > refreshAfter {
		if _, err := w.g.run(ctx, nil, "update-index", "-q", "--refresh"); err != nil {
			return fmt.Errorf("restore worktree: %w", err)
		}
	}
	w.tree, w.stray = w.snap.Tree, false
	return nil
}

// unchangedByAgent checks that the worktree's HEAD and index hold what
// they held at handover: the same HEAD file, and an index with the same
// checksum or, rewritten (git refreshes stat data), the same tree.
func (m *manifest) unchangedByAgent() error {
	head, err := os.ReadFile(filepath.Join(m.gitDir, "HEAD"))
	if err != nil {
		return err
	}
	if !bytes.Equal(head, m.head) {
		return fmt.Errorf("%w: HEAD is %q", errAgentGit, bytes.TrimSpace(head))
	}
	if m.sameIndex() {
		return nil
	}
	idx, err := readIndexFile(filepath.Join(m.gitDir, "index"), m.idLen)
	if err != nil {
		return fmt.Errorf("%w: %w", errAgentGit, err)
	}
	if bytes.Equal(idx.sum, m.indexSum) {
		return nil
	}
	check := &manifest{idLen: m.idLen, snapTrees: map[string]bool{}}
	d, err := check.buildDir(idx.entries, 0)
	if err != nil {
		return fmt.Errorf("%w: %w", errAgentGit, err)
	}
	if !bytes.Equal(d.id, m.root.id) {
		return fmt.Errorf("%w: the index holds another tree", errAgentGit)
	}
	return nil
}

// file is the manifest's entry of the tracked file p, or nil.
func (m *manifest) file(p string) *mentry {
	d := m.root
	if dir := path.Dir(p); dir != "." {
		if d = m.dir(dir); d == nil {
			return nil
		}
	}
	i, ok := d.byName[path.Base(p)]
	if !ok || d.ents[i].isDir() {
		return nil
	}
	return &d.ents[i]
}

// rootWrite writes a file of git mode mode holding data (a symlink's
// target for 120000) at p in root: to a temporary file beside it, then
// renamed over whatever is there.
func rootWrite(root *os.Root, p string, mode uint32, data []byte) error {
	name := filepath.FromSlash(p)
	dir := filepath.Dir(name)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".troupe-"+strconv.FormatUint(rand.Uint64(), 16)+".tmp")
	var err error
	switch mode {
	case 0o120000:
		err = root.Symlink(string(data), tmp)
	default:
		perm := os.FileMode(0o644)
		if mode == 0o100755 {
			perm = 0o755
		}
		err = root.WriteFile(tmp, data, perm)
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}
