package workspace

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// textBatch gathers the files of one merge whose contents both sides
// changed: one git process merges them all (git merge-tree) rather than
// a git merge-file each.
type textBatch struct {
	merges []textMerge
}

// textMerge is one file's three contents to merge.
type textMerge struct {
	path               string
	ours, base, theirs []byte
}

// add records a merge of path's contents and returns its change, whose
// contents are made by mergeTexts.
func (b *textBatch) add(path, mode string, ours, base, theirs []byte) *change {
	b.merges = append(b.merges, textMerge{path: path, ours: ours, base: base, theirs: theirs})
	return &change{path: path, to: version{mode: mode}, text: len(b.merges)}
}

// mergeTexts makes the contents of plan's changes that texts holds: a
// conflict is recorded in m (and the change dropped), a merge's result
// goes through git's checkout conversion where conv says. One file is
// merged by git merge-file; more by one git merge-tree --write-tree of
// three commits whose trees hold them under flat names, written as
// loose objects (idLen: the repository's object ID length).
func (r *Repo) mergeTexts(ctx context.Context, conv *converter, texts *textBatch, plan []change, m *merged, idLen int) ([]change, error) {
	if len(texts.merges) == 0 {
		return plan, nil
	}
	var results [][]byte
	var ok []bool
	var err error
	if len(texts.merges) == 1 {
		t := texts.merges[0]
		var data []byte
		var clean bool
		data, clean, err = r.mergeFile(ctx, t.ours, t.base, t.theirs)
		results, ok = [][]byte{data}, []bool{clean}
	} else {
		results, ok, err = r.mergeTree(ctx, texts.merges, idLen)
	}
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	out := plan[:0]
	for _, c := range plan {
		if c.text > 0 {
			if !ok[c.text-1] {
				m.conflict(c.path, "")
				continue
			}
			c.to.data, c.text = results[c.text-1], 0
			if conv.converts(c.path) {
				if c.to.data, err = conv.smudge(ctx, c.path, c.to.data); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// mergeTree merges ms with one git merge-tree --write-tree (rename
// detection off): each merge's result, and whether it merged cleanly.
func (r *Repo) mergeTree(ctx context.Context, ms []textMerge, idLen int) ([][]byte, []bool, error) {
	names := make([]string, len(ms))
	for i := range ms {
		names[i] = strconv.Itoa(i)
	}
	slices.Sort(names) // git's tree order, for names of digits
	side := func(data func(textMerge) []byte, parent string) (string, error) {
		var tree []byte
		for _, n := range names {
			i, _ := strconv.Atoi(n)
			blob := data(ms[i])
			id := objectID(idLen, "blob", blob)
			if err := writeLoose(r.home.objects, id, "blob", blob); err != nil {
				return "", err
			}
			tree = append(append(tree, "100644 "+n+"\x00"...), id...)
		}
		treeID := objectID(idLen, "tree", tree)
		if err := writeLoose(r.home.objects, treeID, "tree", tree); err != nil {
			return "", err
		}
		commit := "tree " + hex.EncodeToString(treeID) + "\n"
		if parent != "" {
			commit += "parent " + parent + "\n"
		}
		commit += "author troupe <troupe@localhost> 0 +0000\ncommitter troupe <troupe@localhost> 0 +0000\n\nmerge\n"
		id := objectID(idLen, "commit", []byte(commit))
		return hex.EncodeToString(id), writeLoose(r.home.objects, id, "commit", []byte(commit))
	}
	base, err := side(func(t textMerge) []byte { return t.base }, "")
	if err != nil {
		return nil, nil, err
	}
	ours, err := side(func(t textMerge) []byte { return t.ours }, base)
	if err != nil {
		return nil, nil, err
	}
	theirs, err := side(func(t textMerge) []byte { return t.theirs }, base)
	if err != nil {
		return nil, nil, err
	}
	g := r.g
	g.conf = append(slices.Clip(g.conf), "-c", "merge.renames=false")
	out, code, err := g.runCode(ctx, nil, "merge-tree", "--write-tree", ours, theirs)
	if err != nil || code > 1 {
		return nil, nil, fmt.Errorf("git merge-tree: exit %d: %v", code, err)
	}
	lines := strings.Split(string(out), "\n")
	ok := make([]bool, len(ms))
	for i := range ok {
		ok[i] = true
	}
	for _, l := range lines[1:] {
		if l == "" {
			break
		}
		if _, name, found := strings.Cut(l, "\t"); found {
			if i, err := strconv.Atoi(name); err == nil && i >= 0 && i < len(ms) {
				ok[i] = false
			}
		}
	}
	results := make([][]byte, len(ms))
	for i := range ms {
		if !ok[i] {
			continue
		}
		typ, data, err := r.objects().read(ctx, strings.TrimSpace(lines[0])+":"+strconv.Itoa(i))
		if err != nil || typ != "blob" {
			return nil, nil, fmt.Errorf("git merge-tree: read result %d: %v", i, err)
		}
		results[i] = data
	}
	return results, ok, nil
}
