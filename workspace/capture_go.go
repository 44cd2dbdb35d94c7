package workspace

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/troupe-ai/troupe/messages"
)

// freshPerCall bounds the pathspecs of one git ls-files.
const freshPerCall = 500

// captureGo writes the tree of the worktree's files as `git add -A &&
// git write-tree` would, in Go: the worktree scanned against its
// manifest, the new entries that are not ignored listed by one git
// ls-files, the changed blobs and the trees along their paths written
// as loose objects. It returns the tree's ID. The worktree's index is
// not touched.
func (w *Worktree) captureGo(ctx context.Context) (string, []messages.OversizeFile, error) {
	m := w.hand
	if err := w.repo.goCaptureOK(ctx); err != nil {
		return "", nil, err
	}
	m.forgetScan()
	m.limit = w.repo.maxChange()
	watch, werr := watchTracked(w.at, m) // before the scan: a write after it is seen
	res, err := m.scan(w.at, true)
	if err != nil {
		watch.close()
		return "", nil, err
	}
	added, err := w.addFresh(ctx, res.fresh)
	if err != nil {
		watch.close()
		return "", nil, err
	}
	ds, over, err := w.storeDeltas(append(slices.Clip(res.deltas), added...))
	if err != nil {
		watch.close()
		return "", nil, err
	}
	id, err := m.rebuild(ds)
	if err != nil {
		watch.close()
		return "", nil, err
	}
	if werr == nil {
		m.scanned, m.watch = res, watch
	}
	return hex.EncodeToString(id), over, nil
}

// storeDeltas writes the blobs of the changed files to the object store,
// a regular file streamed in pieces (its ID is what was stored, should
// it have changed since the scan), and returns the deltas to rebuild the
// tree with: those over the limit are left out (a tracked file keeps its
// snapshot's contents, a new one is absent) and returned apart.
func (w *Worktree) storeDeltas(all []delta) ([]delta, []messages.OversizeFile, error) {
	m := w.hand
	var ds []delta
	var over []messages.OversizeFile
	for _, d := range all {
		switch {
		case d.over:
			over = append(over, messages.OversizeFile{Path: d.path, Bytes: d.bytes})
			continue
		case d.mode == 0o120000:
			if err := writeLoose(m.objDir, d.id, "blob", d.link); err != nil {
				return nil, nil, err
			}
		case d.mode != 0:
			id, err := storeBlobFile(m.objDir, filepath.Join(w.at, filepath.FromSlash(d.path)), m.idLen)
			if err != nil {
				return nil, nil, err
			}
			d.id = id
		}
		ds = append(ds, d)
	}
	return ds, over, nil
}

// addFresh hashes the files under the new entries that are not ignored,
// as git add -A would add them; git ls-files says which they are, with
// an index of its own that does not exist (so what the agent staged
// does not count).
func (w *Worktree) addFresh(ctx context.Context, fresh []freshEntry) ([]delta, error) {
	var ds []delta
	g := w.g.withIndex(filepath.Join(w.hand.gitDir, "troupe-no-index"))
	checked := map[string]bool{}
	for chunk := range slices.Chunk(fresh, freshPerCall) {
		args := []string{"ls-files", "-z", "--others", "--exclude-standard", "--"}
		for _, f := range chunk {
			args = append(args, ":(literal)"+f.path)
		}
		out, err := g.run(ctx, nil, args...)
		if err != nil {
			return nil, err
		}
		for rec := range bytes.SplitSeq(out, []byte{0}) {
			if len(rec) == 0 {
				continue
			}
			p := string(rec)
			if strings.HasSuffix(p, "/") {
				return nil, fmt.Errorf("%w: %s", errNested, p)
			}
			if dotGitPath(p) {
				// git refuses the path (verify_path); its add says so.
				return nil, fmt.Errorf("a path git does not take: %s", p)
			}
			if err := w.noAttributes(p, checked); err != nil {
				return nil, err
			}
			d, err := w.hashFile(p)
			if err != nil {
				return nil, err
			}
			ds = append(ds, d)
		}
	}
	return ds, nil
}

// noAttributes returns errAttributes when p is a .gitattributes file or
// a directory above it, up to one the manifest tracks, holds one
// (ignored ones count: git reads them). checked holds directories seen.
func (w *Worktree) noAttributes(p string, checked map[string]bool) error {
	if path.Base(p) == ".gitattributes" {
		return fmt.Errorf("%w: %s", errAttributes, p)
	}
	for dir := path.Dir(p); dir != "." && !checked[dir] && w.hand.dir(dir) == nil; dir = path.Dir(dir) {
		checked[dir] = true
		_, err := os.Lstat(filepath.Join(w.at, filepath.FromSlash(dir), ".gitattributes"))
		if err == nil {
			return fmt.Errorf("%w: %s/.gitattributes", errAttributes, dir)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// hashFile hashes the new file p (in pieces; one over the manifest's
// limit is only measured).
func (w *Worktree) hashFile(p string) (delta, error) {
	abs := filepath.Join(w.at, filepath.FromSlash(p))
	st, err := lstatFile(abs)
	if err != nil {
		return delta{}, err
	}
	mode, err := fileMode(st.mode, p)
	if err != nil {
		return delta{}, err
	}
	if m := w.hand; mode != 0o120000 && m.limit > 0 && st.bytes > m.limit {
		return delta{path: p, mode: mode, bytes: st.bytes, over: true}, nil
	}
	return w.hand.hashDelta(abs, p, mode)
}

// dir is the manifest's directory at p (slash-separated), or nil.
func (m *manifest) dir(p string) *mdir {
	d := m.root
	for name := range strings.SplitSeq(p, "/") {
		i, ok := d.byName[name]
		if !ok || !d.ents[i].isDir() {
			return nil
		}
		d = d.ents[i].sub
	}
	return d
}

// cnode is a directory of changes: the delta at this path, if any, and
// the changes below it.
type cnode struct {
	d   *delta
	sub map[string]*cnode
}

// rebuild returns the ID of the manifest's tree with ds applied, writing
// the trees that change (the unchanged ones are the snapshot's).
func (m *manifest) rebuild(ds []delta) ([]byte, error) {
	root := &cnode{}
	for i := range ds {
		n := root
		for name := range strings.SplitSeq(ds[i].path, "/") {
			if n.sub == nil {
				n.sub = map[string]*cnode{}
			}
			c := n.sub[name]
			if c == nil {
				c = &cnode{}
				n.sub[name] = c
			}
			n = c
		}
		n.d = &ds[i]
	}
	ents, err := m.rebuildEntries(m.root, root)
	if err != nil {
		return nil, err
	}
	return m.storeTree(ents)
}

// rebuildEntries returns the entries of directory d (nil: a new one)
// with the changes c applied.
func (m *manifest) rebuildEntries(d *mdir, c *cnode) ([]mentry, error) {
	var ents []mentry
	if d != nil {
		for i := range d.ents {
			if _, ok := c.sub[d.ents[i].name]; !ok {
				ents = append(ents, d.ents[i])
			}
		}
	}
	for name, cn := range c.sub {
		var old *mentry
		if d != nil {
			if i, ok := d.byName[name]; ok {
				old = &d.ents[i]
			}
		}
		var file, dir *mentry
		if old != nil && !old.isDir() {
			file = old
		}
		if cn.d != nil {
			file = nil
			if cn.d.mode != 0 {
				file = &mentry{name: name, mode: cn.d.mode, id: cn.d.id}
			}
		}
		if old != nil && old.isDir() && len(cn.sub) == 0 {
			dir = old
		} else if len(cn.sub) > 0 {
			var sub *mdir
			if old != nil && old.isDir() {
				sub = old.sub
			}
			subEnts, err := m.rebuildEntries(sub, cn)
			if err != nil {
				return nil, err
			}
			if len(subEnts) > 0 {
				id, err := m.storeTree(subEnts)
				if err != nil {
					return nil, err
				}
				dir = &mentry{name: name, mode: modeDir, id: id}
			}
		}
		switch {
		case file != nil && dir != nil:
			return nil, fmt.Errorf("capture: %s is both a file and a directory", name)
		case file != nil:
			ents = append(ents, *file)
		case dir != nil:
			ents = append(ents, *dir)
		}
	}
	return ents, nil
}

// storeTree sorts ents in tree order, writes their tree object unless
// the store holds it and returns its ID.
func (m *manifest) storeTree(ents []mentry) ([]byte, error) {
	slices.SortFunc(ents, func(a, b mentry) int { return treeOrder(&a, &b) })
	data := treeObject(ents)
	id := objectID(m.idLen, "tree", data)
	if m.trees[string(id)] {
		return id, nil
	}
	if err := writeLoose(m.objDir, id, "tree", data); err != nil {
		return nil, err
	}
	m.trees[string(id)] = true
	return id, nil
}

// dotGitPath reports whether a component of the slash-separated path p
// is .git in any case, which git never adds.
func dotGitPath(p string) bool {
	for c := range strings.SplitSeq(p, "/") {
		if strings.EqualFold(c, ".git") {
			return true
		}
	}
	return false
}
