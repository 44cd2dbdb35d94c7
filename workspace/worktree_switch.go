package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Reasons a worktree is not switched in Go; the slow reset follows.
var (
	// errSubmodule: a submodule changed, which git's own checkout handles.
	errSubmodule = errors.New("a submodule changed")
	// errTreeUnknown: the agent may have changed anything since its capture.
	errTreeUnknown = errors.New("the worktree's tree is unknown")
)

// switchFiles moves the worktree's tracked files and index from tree
// from (which they hold) to tree to: the paths that differ written or
// deleted here, from objects read through the Repo's object reader, and
// the index told with one git update-index. Git re-reads the written
// files' stat data at the next capture.
func (w *Worktree) switchFiles(ctx context.Context, from, to string) error {
	es, err := w.repo.changedEntries(ctx, from, to)
	if err != nil {
		return err
	}
	var info bytes.Buffer
	for _, e := range es {
		if e.oldMode == "160000" || e.newMode == "160000" {
			return errSubmodule
		}
		if !filepath.IsLocal(filepath.FromSlash(e.path)) || strings.Contains(e.path, "\x00") {
			return fmt.Errorf("%s: %w", e.path, errOutside)
		}
	}
	// Deletions first: a file may give way to a directory of that name.
	for _, e := range es {
		if e.newMode == "" {
			if err := writeChange(w.fd, change{path: e.path}); err != nil {
				return err
			}
			fmt.Fprintf(&info, "0 %s\t%s\x00", e.oldBlob, e.path)
		}
	}
	for _, e := range es {
		if e.newMode == "" {
			continue
		}
		_, data, err := w.repo.objects().read(ctx, e.newBlob)
		if err != nil {
			return err
		}
		if err := writeChange(w.fd, change{path: e.path, to: version{mode: e.newMode, data: data}}); err != nil {
			return err
		}
		fmt.Fprintf(&info, "%s %s\t%s\x00", e.newMode, e.newBlob, e.path)
	}
	if info.Len() == 0 {
		return nil
	}
	_, err = w.g.run(ctx, info.Bytes(), "update-index", "-z", "--index-info")
	return err
}
