package workspace

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A manifest is what a worktree held when it was handed to an agent:
// every tracked file with its mode, blob ID and stat data, read from the
// worktree's index, arranged as the snapshot's trees (whose IDs it
// recomputes and checks against the snapshot). Capture compares the
// files with it in Go, hashing only those whose stat data it cannot
// trust, and the pool's preparation restores only the paths that differ
// from it. Any doubt (an index the reader does not take, a repository
// whose files git adds in ways the Go path does not model) leaves no
// manifest, and git does the work.
type manifest struct {
	root  *mdir
	idLen int
	// anyDev: the files' device numbers are not compared (an overlay
	// worktree's index holds the lower tree's, its mount has its own).
	anyDev bool
	// untouched, when set, reports that the directory rel and all below
	// it are as the manifest has them, unscanned: an overlay worktree's
	// directory absent from its upper directory (overlay_capture.go).
	untouched func(rel string) bool
	// The index's modification time: an entry's stat data is trusted
	// only when its mtime is strictly earlier (git's racy rule).
	idxS, idxNS int64
	gitDir      string // the worktree's git directory
	objDir      string // the repository's object store
	indexSum    []byte // the index file's checksum as handed over
	head        []byte // the HEAD file as handed over
	indexSize   int64
	indexIno    uint64
	snapTrees   map[string]bool // the snapshot's trees
	trees       map[string]bool // trees known to be in the store: the snapshot's and those written since handover

	// The last capture's scan and the watch set before it: while the
	// watch is quiet, the scan still says how the worktree differs, and
	// a restore needs no walk of its own.
	scanned *scanResult
	watch   *dirWatch

	// limit is the largest regular file a capture carries (0: any); a
	// bigger one is measured, never read.
	limit int64
}

// forgetScan drops the last capture's scan and ends its watch.
func (m *manifest) forgetScan() {
	m.watch.close()
	m.watch, m.scanned = nil, nil
}

// mentry is an entry of a manifest directory: a file or a directory.
type mentry struct {
	name string
	mode uint32 // 0o40000 for a directory
	id   []byte
	stat indexStat // files only
	sub  *mdir     // directories only
}

// mdir is a directory of the manifest: its entries in git's tree order
// and its tree ID.
type mdir struct {
	id     []byte
	ents   []mentry
	byName map[string]int
}

const modeDir = 0o40000

func (e *mentry) isDir() bool { return e.mode == modeDir }

// treeOrder is git's order of tree entries: names compared as bytes, a
// directory's name as if followed by '/'.
func treeOrder(a, b *mentry) int {
	an, bn := a.name, b.name
	if a.isDir() {
		an += "/"
	}
	if b.isDir() {
		bn += "/"
	}
	return strings.Compare(an, bn)
}

// treeObject is the contents of the tree object holding ents (in tree
// order).
func treeObject(ents []mentry) []byte {
	var b bytes.Buffer
	for i := range ents {
		b.WriteString(strconv.FormatUint(uint64(ents[i].mode), 8))
		b.WriteByte(' ')
		b.WriteString(ents[i].name)
		b.WriteByte(0)
		b.Write(ents[i].id)
	}
	return b.Bytes()
}

// handOver records the worktree's manifest as it goes to an agent, or
// none when the Go path cannot vouch for it (w.handErr says why).
func (w *Worktree) handOver(ctx context.Context) {
	if m := w.hand; m != nil && hex.EncodeToString(m.root.id) == w.snap.Tree && m.sameIndex() {
		if err := w.repo.goCaptureOK(ctx); err != nil {
			w.hand, w.handErr = nil, err
			return
		}
		m.forgetScan()
		head, err := os.ReadFile(filepath.Join(m.gitDir, "HEAD"))
		if err == nil {
			m.head, m.trees = head, maps.Clone(m.snapTrees)
			return // the index the last manifest was read from, unchanged
		}
	}
	w.hand, w.handErr = nil, nil
	m, err := w.readManifest(ctx)
	if err != nil {
		w.handErr = err
		return
	}
	w.hand = m
}

// readManifest reads the worktree's index into a manifest and checks
// that it holds the snapshot's tree.
func (w *Worktree) readManifest(ctx context.Context) (*manifest, error) {
	if err := w.repo.goCaptureOK(ctx); err != nil {
		return nil, err
	}
	if w.ov != nil && w.ov.lower != nil {
		if m, ok := w.lowerManifest(ctx); ok {
			return m, nil
		}
	}
	idLen := len(w.snap.Tree) / 2
	m := &manifest{idLen: idLen, gitDir: w.admin, objDir: w.repo.home.objects, snapTrees: map[string]bool{}, anyDev: w.ov != nil, untouched: w.untouchedDir()}
	var err error
	if m.head, err = os.ReadFile(filepath.Join(w.admin, "HEAD")); err != nil {
		return nil, err
	}
	idx, err := readIndexFile(filepath.Join(w.admin, "index"), idLen)
	if err != nil {
		return nil, err
	}
	m.idxS, m.idxNS, m.indexSum, m.indexSize, m.indexIno = idx.mtimeSec, idx.mtimeNsec, idx.sum, idx.size, idx.ino
	if m.root, err = m.buildDir(idx.entries, 0); err != nil {
		return nil, err
	}
	if got := hex.EncodeToString(m.root.id); got != w.snap.Tree {
		return nil, fmt.Errorf("%w: holds tree %s, not the snapshot's %s", errIndex, got, w.snap.Tree)
	}
	m.trees = maps.Clone(m.snapTrees)
	return m, nil
}

// buildDir makes the directory whose entries are es (sorted by path, all
// under the same directory, whose path is plen bytes long with its
// slash), and computes its tree ID.
func (m *manifest) buildDir(es []indexEntry, plen int) (*mdir, error) {
	d := &mdir{}
	for len(es) > 0 {
		rest := es[0].path[plen:]
		name, _, isDir := strings.Cut(rest, "/")
		if !isDir {
			if es[0].mode == 0o160000 {
				return nil, fmt.Errorf("%w: submodule %s", errIndex, es[0].path)
			}
			if name == ".gitattributes" {
				return nil, fmt.Errorf("%w: %s", errAttributes, es[0].path)
			}
			d.ents = append(d.ents, mentry{name: name, mode: es[0].mode, id: es[0].id, stat: es[0].stat})
			es = es[1:]
			continue
		}
		prefix := es[0].path[:plen+len(name)+1]
		n := 1
		for n < len(es) && strings.HasPrefix(es[n].path, prefix) {
			n++
		}
		sub, err := m.buildDir(es[:n], len(prefix))
		if err != nil {
			return nil, err
		}
		d.ents = append(d.ents, mentry{name: name, mode: modeDir, id: sub.id, sub: sub})
		es = es[n:]
	}
	m.finish(d)
	m.snapTrees[string(d.id)] = true // the snapshot's trees are in the store
	return d, nil
}

// sameIndex reports whether the worktree's index file is the one m was
// read from: same inode, size and modification time, same checksum.
func (m *manifest) sameIndex() bool {
	f, err := os.Open(filepath.Join(m.gitDir, "index"))
	if err != nil {
		return false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.Size() != m.indexSize || inode(info) != m.indexIno || inode(info) == 0 {
		return false
	}
	mt := info.ModTime()
	if mt.Unix() != m.idxS || int64(mt.Nanosecond()) != m.idxNS {
		return false
	}
	sum := make([]byte, len(m.indexSum))
	_, err = f.ReadAt(sum, info.Size()-int64(len(sum)))
	return err == nil && bytes.Equal(sum, m.indexSum)
}

// finish sorts d's entries in tree order, indexes them by name and
// computes d's tree ID.
func (m *manifest) finish(d *mdir) {
	slices.SortFunc(d.ents, func(a, b mentry) int { return treeOrder(&a, &b) })
	d.byName = make(map[string]int, len(d.ents))
	for i := range d.ents {
		d.byName[d.ents[i].name] = i
	}
	d.id = objectID(m.idLen, "tree", treeObject(d.ents))
}
