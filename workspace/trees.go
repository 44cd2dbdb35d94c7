package workspace

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// treeEntry is one entry of a git tree object.
type treeEntry struct {
	mode string // canonical: 100644, 100755, 120000, 160000, or 40000 for a tree
	name string
	id   string
}

func (e treeEntry) isTree() bool { return e.mode == "40000" }

// parseTree reads a tree object's contents ("<mode> <name>\0<id>" per
// entry, the ID idLen raw bytes).
func parseTree(data []byte, idLen int) ([]treeEntry, error) {
	var es []treeEntry
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp <= 0 || nul < sp+2 || len(data) < nul+1+idLen {
			return nil, fmt.Errorf("%w: bad tree entry", ErrBadObject)
		}
		mode, err := canonicalMode(string(data[:sp]))
		if err != nil {
			return nil, err
		}
		es = append(es, treeEntry{mode: mode, name: string(data[sp+1 : nul]), id: hex.EncodeToString(data[nul+1 : nul+1+idLen])})
		data = data[nul+1+idLen:]
	}
	return es, nil
}

// canonicalMode is the mode git reports for a tree entry's recorded mode.
func canonicalMode(s string) (string, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		return "", fmt.Errorf("%w: bad mode %q", ErrBadObject, s)
	}
	switch m & 0o170000 {
	case 0o040000:
		return "40000", nil
	case 0o120000:
		return "120000", nil
	case 0o160000:
		return "160000", nil
	case 0o100000:
		if m&0o111 != 0 {
			return "100755", nil
		}
		return "100644", nil
	}
	return "", fmt.Errorf("%w: bad mode %q", ErrBadObject, s)
}

// changedEntries lists the files (blobs, symlinks, gitlinks) that differ
// between trees a and b, sorted by path, as git diff-tree -r would, read
// through the Repo's object reader: subtrees whose IDs are equal are not
// read.
func (r *Repo) changedEntries(ctx context.Context, a, b string) ([]entry, error) {
	var es []entry
	if a == b {
		return nil, nil
	}
	if err := r.diffTree(ctx, "", a, b, len(a)/2, &es); err != nil {
		return nil, err
	}
	slices.SortFunc(es, func(x, y entry) int { return strings.Compare(x.path, y.path) })
	return es, nil
}

// diffTree appends to es the files that differ between trees a and b
// ("" for none) under prefix.
func (r *Repo) diffTree(ctx context.Context, prefix, a, b string, idLen int, es *[]entry) error {
	ta, err := r.readTree(ctx, a, idLen)
	if err != nil {
		return err
	}
	tb, err := r.readTree(ctx, b, idLen)
	if err != nil {
		return err
	}
	byName := map[string][2]*treeEntry{}
	for i := range ta {
		byName[ta[i].name] = [2]*treeEntry{&ta[i], nil}
	}
	for i := range tb {
		p := byName[tb[i].name]
		p[1] = &tb[i]
		byName[tb[i].name] = p
	}
	for name, p := range byName {
		ea, eb := p[0], p[1]
		if ea != nil && eb != nil && *ea == *eb {
			continue
		}
		path := prefix + name
		var subA, subB string
		if ea != nil && ea.isTree() {
			subA, ea = ea.id, nil
		}
		if eb != nil && eb.isTree() {
			subB, eb = eb.id, nil
		}
		if subA != "" || subB != "" {
			if err := r.diffTree(ctx, path+"/", subA, subB, idLen, es); err != nil {
				return err
			}
		}
		if ea != nil || eb != nil {
			e := entry{path: path}
			if ea != nil {
				e.oldMode, e.oldBlob = ea.mode, ea.id
			}
			if eb != nil {
				e.newMode, e.newBlob = eb.mode, eb.id
			}
			*es = append(*es, e)
		}
	}
	return nil
}

// readTree reads tree id's entries (none for "").
func (r *Repo) readTree(ctx context.Context, id string, idLen int) ([]treeEntry, error) {
	if id == "" {
		return nil, nil
	}
	typ, data, err := r.objects().read(ctx, id)
	if err != nil {
		return nil, err
	}
	if typ != "tree" {
		return nil, fmt.Errorf("%w: %s is a %s, not a tree", ErrBadObject, id, typ)
	}
	return parseTree(data, idLen)
}

// readBlobs reads the blobs named by ids (gitlinks and absent sides,
// whose IDs are empty, skipped).
func (r *Repo) readBlobs(ctx context.Context, es []entry) (map[string][]byte, error) {
	blobs := map[string][]byte{}
	for _, e := range es {
		for _, side := range [][2]string{{e.oldMode, e.oldBlob}, {e.newMode, e.newBlob}} {
			if side[1] == "" || side[0] == "160000" {
				continue
			}
			if _, ok := blobs[side[1]]; ok {
				continue
			}
			_, data, err := r.objects().read(ctx, side[1])
			if err != nil {
				return nil, err
			}
			blobs[side[1]] = data
		}
	}
	return blobs, nil
}

// objects is the Repo's object reader, made on first use.
func (r *Repo) objects() *objectReader {
	r.objOnce.Do(func() { r.obj = &objectReader{g: r.g} })
	return r.obj
}
