package workspace

import (
	"bytes"
	"context"
	"fmt"
	"strings"
)

// A worktree is checked out through the user's filters as the user's
// own checkout is: a file whose filter attribute names a driver of the
// user's global config (never one the repository's config defines) is
// written in its smudged form, the driver run confined as for a land
// (filter_confined.go, filter_process.go), after git's conversion of
// line endings. Its capture then cleans what it changed of those files
// the same way (cleanFiltered), so the changeset holds git's clean form
// and a file the agent left as it was is no change. On a machine where
// the sandbox cannot be enforced, or for a file over the Repo's limit,
// the file stays in its clean form (as before).

// smudgeFiltered writes the worktree's filtered files in their smudged
// form and records them (w.filtered) for its captures.
func (w *Worktree) smudgeFiltered(ctx context.Context) error {
	w.filtered = nil
	if w.ov != nil { // the lower tree it shows was checked out through them
		w.filtered = w.ov.lower.filtered
		return nil
	}
	uc := w.repo.conv
	if len(uc.filters) == 0 || filterUnsupported() != "" {
		return nil
	}
	c, exec, err := w.filterConverter(ctx, w.snap.Tree)
	if err != nil || c == nil {
		return err
	}
	for path := range c.filtered {
		id := w.snap.Tree + ":" + path
		n, err := w.repo.objects().size(ctx, id)
		if err != nil || n > w.repo.maxChange() {
			continue
		}
		perm := uint32(0o644)
		if exec[path] {
			perm = 0o755
		}
		if err := replaceFrom(w.fd, path, perm, c.smudgeSrc(ctx, path, id)); err != nil {
			return fmt.Errorf("check out %s through your filter: %w", path, err)
		}
	}
	w.filtered = c
	return nil
}

// filterConverter is a converter of the regular files of tree whose
// filter attribute (read in the worktree) names a driver of the user's
// global config (nil when there are none), and which of tree's files are
// executable.
func (w *Worktree) filterConverter(ctx context.Context, tree string) (*converter, map[string]bool, error) {
	out, err := w.g.run(ctx, nil, "ls-tree", "-r", "-z", "--full-tree", tree)
	if err != nil {
		return nil, nil, err
	}
	var paths strings.Builder
	exec := map[string]bool{}
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		if ok && (bytes.HasPrefix(meta, []byte("100644 ")) || bytes.HasPrefix(meta, []byte("100755 "))) {
			paths.Write(path)
			paths.WriteByte(0)
			if meta[3] == '7' {
				exec[string(path)] = true
			}
		}
	}
	if paths.Len() == 0 {
		return nil, nil, nil
	}
	attrs, err := w.g.run(ctx, []byte(paths.String()), "check-attr", "-z", "--stdin", "filter")
	if err != nil {
		return nil, nil, fmt.Errorf("read attributes: %w", err)
	}
	uc := w.repo.conv
	c := &converter{r: w.repo, g: w.g, at: w.at, paths: map[string]bool{}, filtered: map[string]filterDriver{}, refused: map[string]string{}}
	f := strings.Split(string(attrs), "\x00")
	for i := 0; i+2 < len(f); i += 3 {
		if name := f[i+2]; uc.filters[name] {
			c.paths[f[i]] = true
			c.filtered[f[i]] = uc.drivers[name]
		}
	}
	if len(c.filtered) == 0 {
		return nil, nil, nil
	}
	return c, exec, nil
}

// cleanFiltered is tree with the filtered files the capture changed or
// added (their smudged form, as the worktree holds them) replaced by
// their clean form: the blob git add would make through the user's
// filter. A file the snapshot did not hold goes through the filter its
// attributes (read in the worktree) name, as git add would take it.
func (w *Worktree) cleanFiltered(ctx context.Context, tree string) (string, error) {
	c := w.filtered
	if tree == w.snap.Tree || (c == nil && (len(w.repo.conv.filters) == 0 || filterUnsupported() != "")) {
		return tree, nil
	}
	out, err := w.g.run(ctx, nil, "diff-tree", "-r", "-z", "--no-renames", "--raw", w.snap.Tree, tree)
	if err != nil {
		return "", err
	}
	type changed struct{ mode, blob, path string }
	var files []changed
	recs := bytes.Split(out, []byte{0})
	for i := 0; i+1 < len(recs); i += 2 {
		meta := bytes.Fields(recs[i])
		if len(meta) >= 5 && (string(meta[1]) == "100644" || string(meta[1]) == "100755") {
			files = append(files, changed{string(meta[1]), string(meta[3]), string(recs[i+1])})
		}
	}
	drivers, err := w.changedDrivers(ctx, c, func(yield func(string) bool) {
		for _, f := range files {
			if !yield(f.path) {
				return
			}
		}
	})
	if err != nil || len(drivers) == 0 {
		return tree, err
	}
	cc := &converter{r: w.repo, g: w.g, at: w.at, viewOnly: w.ov != nil, paths: map[string]bool{}, filtered: drivers, refused: map[string]string{}}
	var info bytes.Buffer
	for _, f := range files {
		if !drivers[f.path].any() {
			continue
		}
		id, err := cc.cleanID(ctx, f.path, w.repo.blobTo(ctx, f.blob))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&info, "%s %s\t%s\x00", f.mode, id, f.path)
	}
	if info.Len() == 0 {
		return tree, nil
	}
	idx, done, err := w.repo.tempIndex()
	if err != nil {
		return "", err
	}
	defer done()
	g := w.g.withIndex(idx)
	if _, err := g.run(ctx, nil, "read-tree", tree); err != nil {
		return "", err
	}
	if _, err := g.run(ctx, info.Bytes(), "update-index", "-z", "--index-info"); err != nil {
		return "", err
	}
	return g.line(ctx, "write-tree")
}

// changedDrivers maps each of paths that goes through a driver of the
// user's global config to it: c's (the checkout's) for those the
// snapshot held through one, the attributes in the worktree for the
// rest.
func (w *Worktree) changedDrivers(ctx context.Context, c *converter, paths func(func(string) bool)) (map[string]filterDriver, error) {
	drivers := map[string]filterDriver{}
	var ask strings.Builder
	for p := range paths {
		if c != nil && c.filtered[p].any() {
			drivers[p] = c.filtered[p]
		} else {
			ask.WriteString(p + "\x00")
		}
	}
	uc := w.repo.conv
	if ask.Len() == 0 || len(uc.filters) == 0 || filterUnsupported() != "" {
		return drivers, nil
	}
	attrs, err := w.g.run(ctx, []byte(ask.String()), "check-attr", "-z", "--stdin", "filter")
	if err != nil {
		return nil, fmt.Errorf("read attributes: %w", err)
	}
	f := strings.Split(string(attrs), "\x00")
	for i := 0; i+2 < len(f); i += 3 {
		if name := f[i+2]; uc.filters[name] && uc.drivers[name].any() {
			drivers[f[i]] = uc.drivers[name]
		}
	}
	return drivers, nil
}

// any reports whether d is a driver (a path's entry in filtered).
func (d filterDriver) any() bool { return d.clean != "" || d.smudge != "" || d.process != "" }
