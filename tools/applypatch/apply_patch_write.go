package applypatch

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/troupe-ai/troupe/tools"
)

// undoStep is one completed write step: a file written or removed, or a
// directory created.
type undoStep struct {
	file *fileState
	dir  string
}

// commit writes the plan: each changed file through a temporary file and a
// rename (so no reader sees half a file), each deleted file removed. If an
// I/O step fails midway, every step already taken is undone, newest first,
// and the error says so; the read tracker is updated only on success.
func (pl *patchPlan) commit() error {
	var done []undoStep
	for _, abs := range pl.order {
		st := pl.files[abs]
		var err error
		switch {
		case st.exists && st.existed && bytes.Equal(st.content, st.orig):
			continue // unchanged (or changed back)
		case st.exists:
			var dirs []string
			dirs, err = pl.s.Workspace.Mkdirs(filepath.Dir(abs))
			for _, d := range dirs {
				done = append(done, undoStep{dir: d})
			}
			if err == nil {
				err = pl.s.Workspace.WriteAtomic(abs, st.content, st.mode)
			}
		case st.existed:
			err = pl.s.Workspace.Remove(abs)
		default:
			continue // added and deleted again within the patch
		}
		if err != nil {
			failed := rollback(pl.s.Workspace, done)
			msg := fmt.Sprintf("writing %s failed: %v; ", st.display, pathErrText(err))
			if len(failed) > 0 {
				return fmt.Errorf("%sthe rollback could not restore %s, check them by hand", msg, strings.Join(failed, ", "))
			}
			return fmt.Errorf("%severy change of this patch was rolled back, nothing was written", msg)
		}
		done = append(done, undoStep{file: st})
	}
	for _, abs := range pl.order {
		if st := pl.files[abs]; st.exists {
			pl.s.Reads.Record(abs, st.content)
		} else {
			pl.s.Reads.Forget(abs)
		}
	}
	return nil
}

// pathErrText drops the absolute path from an *fs.PathError: the caller
// names the file as the model knows it.
func pathErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// rollback undoes done, newest first (so a directory created for a new
// file is gone before a file of the same name is restored), and returns
// the display paths it could not restore.
func rollback(ws *tools.Workspace, done []undoStep) []string {
	var failed []string
	for i := len(done) - 1; i >= 0; i-- {
		st := done[i].file
		if st == nil {
			_ = ws.Remove(done[i].dir) // removes it only if empty, as it should be
			continue
		}
		var err error
		switch {
		case st.link != "":
			err = ws.Symlink(st.link, st.abs)
		case st.existed:
			err = ws.WriteAtomic(st.abs, st.orig, st.mode)
		default:
			err = ws.Remove(st.abs)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			failed = append(failed, st.display)
		}
	}
	return failed
}

// changes lists what commit would write, for the diff: a moved file as one
// change from its old path to its new one, unchanged files left out.
func (pl *patchPlan) changes() []tools.FileChange {
	moved := map[*fileState]bool{}
	for _, abs := range pl.order {
		if st := pl.files[abs]; st.movedFrom != nil && st.exists {
			moved[st.movedFrom] = true
		}
	}
	var out []tools.FileChange
	for _, abs := range pl.order {
		st := pl.files[abs]
		switch {
		case moved[st] && !st.exists:
			continue // shown with where it went
		case st.movedFrom != nil && st.exists:
			src := st.movedFrom
			for src.movedFrom != nil && !src.existed { // moved twice
				src = src.movedFrom
			}
			out = append(out, tools.FileChange{From: src.display, To: st.display, Old: src.orig, New: st.content})
		case st.existed && st.exists && bytes.Equal(st.content, st.orig):
			continue
		case st.existed && st.exists:
			out = append(out, tools.FileChange{From: st.display, To: st.display, Old: st.orig, New: st.content})
		case st.exists:
			out = append(out, tools.FileChange{To: st.display, New: st.content})
		case st.existed:
			out = append(out, tools.FileChange{From: st.display, Old: st.orig})
		}
	}
	return out
}
