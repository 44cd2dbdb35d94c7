//go:build !linux

package search

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// dirHandle is an open directory, as an os.Root: its entries are opened
// beneath it, which never leads outside it.
type dirHandle struct{ r *os.Root }

var noDir = dirHandle{}

// opened is the search's target when it is a file: the root and the path
// to open it by, beneath the root.
type opened struct {
	root *os.Root
	rel  string
}

func (o *opened) close() {}

// openStart opens the target rel beneath root and returns it as a
// directory to walk or as a file with its type bits.
func openStart(root *os.Root, rel string) (dirHandle, *opened, fs.FileMode, error) {
	fi, err := root.Stat(rel)
	if err != nil {
		return noDir, nil, 0, err
	}
	if !fi.IsDir() {
		return noDir, &opened{root: root, rel: rel}, fi.Mode().Type(), nil
	}
	r, err := root.OpenRoot(rel)
	if err != nil {
		return noDir, nil, 0, err
	}
	return dirHandle{r: r}, nil, fs.ModeDir, nil
}

// openChild opens the subdirectory name of h, refusing a symbolic link.
// (A link swapped in between the check and the open is followed, but
// only within h.)
func (h dirHandle) openChild(name string) (dirHandle, error) {
	fi, err := h.r.Lstat(name)
	if err != nil {
		return noDir, err
	}
	if !fi.IsDir() {
		return noDir, fmt.Errorf("%s: not a directory", name)
	}
	r, err := h.r.OpenRoot(name)
	if err != nil {
		return noDir, err
	}
	return dirHandle{r: r}, nil
}

func (h dirHandle) close() {
	if h.r != nil {
		h.r.Close()
	}
}

func (h dirHandle) list(_ []byte, fn func(name string, typ fs.FileMode)) error {
	f, err := h.r.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	for _, e := range ents {
		fn(e.Name(), e.Type())
	}
	return err
}

// listFile lists the open directory f.
func listFile(f *os.File, fn func(name string, typ fs.FileMode)) error {
	ents, err := f.ReadDir(-1)
	for _, e := range ents {
		fn(e.Name(), e.Type())
	}
	return err
}

func openEntry(e Entry, _ bool) (*rawFile, error) {
	var f *os.File
	var err error
	const flags = os.O_RDONLY | syscall.O_NONBLOCK
	switch {
	case e.pre != nil:
		f, err = e.pre.root.OpenFile(e.pre.rel, flags, 0)
	case e.dir.r != nil:
		f, err = e.dir.r.OpenFile(e.Name, flags, 0)
	default:
		return nil, fmt.Errorf("%s: %w", e.Path, ErrOutsideRoot)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %w", e.Path, ErrNotRegular)
	}
	return &rawFile{f}, nil
}

func lstatEntry(e Entry) (time.Time, bool, error) {
	var fi fs.FileInfo
	var err error
	switch {
	case e.pre != nil:
		fi, err = e.pre.root.Stat(e.pre.rel)
	case e.dir.r != nil:
		fi, err = e.dir.r.Lstat(e.Name)
	default:
		err = fmt.Errorf("%s: %w", e.Path, ErrOutsideRoot)
	}
	if err != nil {
		return time.Time{}, false, err
	}
	return fi.ModTime(), fi.IsDir(), nil
}
