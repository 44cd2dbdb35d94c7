package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// An overlay worktree's capture costs what its agent touched: a
// directory the agent changed nothing in, below or at it, is not in the
// upper directory (overlay copies a directory up, with every directory
// above it, before anything in it changes: a file written, made,
// removed, renamed or its metadata changed; a directory renamed is
// copied, redirect_dir being off), so the scan (capture_scan.go) skips
// it whole. The directories it does scan are read through the merged
// view, and a file copied up without a change to its contents (chmod
// back, touch) is hashed and compared with the manifest's blob, so it is
// no change.

// untouchedDir is the manifest's untouched test for w: nil for a checkout.
func (w *Worktree) untouchedDir() func(rel string) bool {
	if w.ov == nil {
		return nil
	}
	up := filepath.Join(w.ov.side, "up")
	return func(rel string) bool {
		_, err := os.Lstat(filepath.Join(up, filepath.FromSlash(rel)))
		return errors.Is(err, fs.ErrNotExist)
	}
}
