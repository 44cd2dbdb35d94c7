package tools

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// tempAttempts bounds the names tried for a temporary file.
const tempAttempts = 100

// tempName is a temporary file's name: short, so that a file whose own
// name takes the file system's whole 255 bytes can still be written next
// to it, and hidden.
func tempName() string { return fmt.Sprintf(".troupe-%08x.tmp", rand.Uint32()) }

// WriteAtomic replaces (or creates) the file abs with data, permission
// bits perm, through a temporary file in the same folder and a rename, so
// that a reader sees the old content or the new, never a mix, and a
// failure leaves the old file whole. The folder is opened once beneath
// the root; the temporary file is created, renamed and (on failure)
// removed through that handle, so all three happen in the folder that was
// checked, whatever is swapped meanwhile.
func (w *Workspace) WriteAtomic(abs string, data []byte, perm fs.FileMode) error {
	rel, err := w.relOf(abs)
	if err != nil {
		return err
	}
	if rel == "." {
		return &fs.PathError{Op: "write", Path: ".", Err: errors.New("is the workspace root, a folder")}
	}
	if err := w.checkRel(rel); err != nil {
		return err
	}
	dirRel, base := filepath.Split(rel)
	d := w.dir
	if dirRel != "" {
		if d, err = w.dir.OpenRoot(filepath.Clean(dirRel)); err != nil {
			return w.fsErr(err, filepath.Clean(dirRel))
		}
		defer d.Close()
		if err := w.checkOpened(d); err != nil {
			return err
		}
	}
	if err := writeVia(d, base, perm, func(f io.Writer) error { _, err := f.Write(data); return err }); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) { // named in d, by its temporary name maybe
			err = &fs.PathError{Op: pe.Op, Path: rel, Err: pe.Err}
		}
		return w.fsErr(err, rel)
	}
	return nil
}

// writeVia writes name in the folder d with what fill writes, through a
// temporary file (removed on failure) and a rename; the file ends with
// permission bits perm.
func writeVia(d *os.Root, name string, perm fs.FileMode, fill func(io.Writer) error) (err error) {
	var f *os.File
	var tmp string
	for range tempAttempts {
		tmp = tempName()
		f, err = d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = d.Remove(tmp)
		}
	}()
	if err = fill(f); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = d.Rename(tmp, name); err != nil {
		var le *os.LinkError
		if errors.As(err, &le) {
			return &fs.PathError{Op: "rename", Path: name, Err: le.Err}
		}
	}
	return err
}
