package workspace

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"github.com/troupe-ai/troupe/messages"
)

// dropOversize finds the regular files the worktree's index (holding
// tree, written by git add -A) adds or changes beyond the Repo's limit
// and puts their snapshot's entries back (a new file's: none), so the
// changeset leaves them out; it returns them. git streams a big file
// into the object store itself; troupe reads only the sizes.
func (w *Worktree) dropOversize(ctx context.Context, tree string) ([]messages.OversizeFile, error) {
	return w.dropOversizeIn(ctx, w.g, tree)
}

// dropOversizeIn is dropOversize in the index of g.
func (w *Worktree) dropOversizeIn(ctx context.Context, g git, tree string) ([]messages.OversizeFile, error) {
	out, err := g.run(ctx, nil, "diff-tree", "-r", "-z", "--no-renames", "--raw", w.snap.Tree, tree)
	if err != nil {
		return nil, err
	}
	type change struct{ path, oldMode, oldID, newID string }
	var changed []change
	var ids bytes.Buffer
	for len(out) > 0 {
		end := bytes.IndexByte(out, 0)
		if end < 0 || out[0] != ':' {
			break
		}
		meta := bytes.Fields(out[1:end])
		out = out[end+1:]
		end = bytes.IndexByte(out, 0)
		if end < 0 || len(meta) < 5 {
			return nil, fmt.Errorf("capture: diff-tree said %q", meta)
		}
		p := string(out[:end])
		out = out[end+1:]
		if st := string(meta[4]); st == "D" || (string(meta[1]) != "100644" && string(meta[1]) != "100755") {
			continue
		}
		changed = append(changed, change{path: p, oldMode: string(meta[0]), oldID: string(meta[2]), newID: string(meta[3])})
		ids.WriteString(string(meta[3]) + "\n")
	}
	if len(changed) == 0 {
		return nil, nil
	}
	sizes, err := g.run(ctx, ids.Bytes(), "cat-file", "--batch-check=%(objectsize)")
	if err != nil {
		return nil, err
	}
	lines := bytes.Split(bytes.TrimSuffix(sizes, []byte{'\n'}), []byte{'\n'})
	if len(lines) != len(changed) {
		return nil, fmt.Errorf("capture: cat-file gave %d sizes for %d blobs", len(lines), len(changed))
	}
	var over []messages.OversizeFile
	var info bytes.Buffer
	limit := w.repo.maxChange()
	for i, c := range changed {
		n, err := strconv.ParseInt(string(lines[i]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("capture: size of %s: %q", c.path, lines[i])
		}
		if n <= limit {
			continue
		}
		over = append(over, messages.OversizeFile{Path: c.path, Bytes: n})
		if c.oldMode == "000000" {
			fmt.Fprintf(&info, "0 %s\t%s\x00", zeroID(len(c.oldID)), c.path)
		} else {
			fmt.Fprintf(&info, "%s %s\t%s\x00", c.oldMode, c.oldID, c.path)
		}
	}
	if len(over) == 0 {
		return nil, nil
	}
	if _, err := g.run(ctx, info.Bytes(), "update-index", "-z", "--index-info"); err != nil {
		return nil, err
	}
	return over, nil
}

// zeroID is the all-zero object name of n hex digits.
func zeroID(n int) string { return string(bytes.Repeat([]byte{'0'}, n)) }

// SetMaxChangeBytes sets the largest file a capture carries (see
// Options.MaxChangeBytes; 0: the default), before the Repo's first
// worktree is made (a snapshot store's, whose Options its opener sets).
func (r *Repo) SetMaxChangeBytes(n int64) { r.opts.MaxChangeBytes = n }

// SetStateDir sets where the Repo keeps patches (Options.StateDir),
// before its first use (a snapshot store's, whose Options its opener
// sets).
func (r *Repo) SetStateDir(dir string) { r.opts.StateDir = dir }
