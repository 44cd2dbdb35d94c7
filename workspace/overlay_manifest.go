package workspace

import (
	"bytes"
	"context"
	"encoding/hex"
	"maps"
	"os"
	"path/filepath"
	"sync"
)

// The manifest of an overlay worktree is its lower tree's: every
// overlay worktree of a lower starts with a copy of the lower's index
// (mountOverlay), so the index is read and the snapshot's trees are
// hashed once per lower tree, not once per worktree. Each worktree's
// manifest shares the lower's directory tree (read-only once built:
// captures and restores build new trees beside it) and has its own
// git directory, HEAD, index identity and set of known trees.

// lowerHand is the manifest read from a lower tree's index, made once.
type lowerHand struct {
	once sync.Once
	m    *manifest // nil when it could not be read: each worktree reads its own
}

// lowerManifest is w's manifest made from its lower tree's, when w's
// index is the lower's (same size, modification time and checksum);
// ok is false otherwise, and the caller reads w's index itself.
func (w *Worktree) lowerManifest(ctx context.Context) (*manifest, bool) {
	l := w.ov.lower
	l.hand.once.Do(func() {
		idLen := len(w.snap.Tree) / 2
		m := &manifest{idLen: idLen, objDir: w.repo.home.objects, snapTrees: map[string]bool{}, anyDev: true}
		idx, err := readIndexFile(l.index, idLen)
		if err != nil || ctx.Err() != nil {
			return
		}
		m.idxS, m.idxNS, m.indexSum, m.indexSize = idx.mtimeSec, idx.mtimeNsec, idx.sum, idx.size
		if m.root, err = m.buildDir(idx.entries, 0); err != nil || hex.EncodeToString(m.root.id) != l.tree {
			return
		}
		l.hand.m = m
	})
	base := l.hand.m
	if base == nil || hex.EncodeToString(base.root.id) != w.snap.Tree {
		return nil, false
	}
	f, err := os.Open(filepath.Join(w.admin, "index"))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.Size() != base.indexSize || inode(info) == 0 {
		return nil, false
	}
	mt := info.ModTime()
	sum := make([]byte, len(base.indexSum))
	if mt.Unix() != base.idxS || int64(mt.Nanosecond()) != base.idxNS {
		return nil, false
	}
	if _, err := f.ReadAt(sum, info.Size()-int64(len(sum))); err != nil || !bytes.Equal(sum, base.indexSum) {
		return nil, false
	}
	head, err := os.ReadFile(filepath.Join(w.admin, "HEAD"))
	if err != nil {
		return nil, false
	}
	return &manifest{root: base.root, idLen: base.idLen, anyDev: true, untouched: w.untouchedDir(),
		idxS: base.idxS, idxNS: base.idxNS, gitDir: w.admin, objDir: base.objDir, indexSum: base.indexSum,
		head: head, indexSize: base.indexSize, indexIno: inode(info), snapTrees: base.snapTrees,
		trees: maps.Clone(base.snapTrees)}, true
}
