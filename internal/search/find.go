package search

import (
	"context"
	"slices"
	"time"
)

// Found is one path found by Find.
type Found struct {
	Path    string // absolute
	Dir     bool
	ModTime time.Time
}

// Find lists the entries below the target whose name (or, for a glob with
// a slash, relative path) matches g: files, directories and symbolic links
// (not followed), newest first, ties by path. Hidden and ignored entries
// are skipped as in Grep. A cancelled ctx stops it with ctx's error.
func Find(ctx context.Context, t Target, g *Glob) ([]Found, error) {
	stopped, release := watch(ctx)
	defer release()
	found := make([][]Found, t.workers())
	err := walk(stopped, t, true, func(w int, e Entry) error {
		if stopped.Load() {
			return errStopped
		}
		if !g.Match(e.Name, relTo(t.Root, e.Path), relTo(t.Path, e.Path)) {
			return nil
		}
		mt, dir, err := lstatEntry(e)
		if err != nil {
			return nil // gone since the directory was read
		}
		found[w] = append(found[w], Found{Path: e.Path, Dir: dir, ModTime: mt})
		return nil
	})
	if stopped.Load() && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	all := slices.Concat(found...)
	slices.SortFunc(all, func(a, b Found) int { return byNewest(a.ModTime, b.ModTime, a.Path, b.Path) })
	return all, nil
}
