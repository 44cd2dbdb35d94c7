//go:build !linux

package search

import (
	"io/fs"
	"os"
	"time"
)

// dirHandle is a directory to list; elsewhere than Linux its entries are
// opened by path.
type dirHandle struct{ path string }

var noDir = dirHandle{}

func openDir(path string) (dirHandle, error) { return dirHandle{path: path}, nil }

func (h dirHandle) close() {}

func (h dirHandle) list(_ []byte, fn func(name string, typ fs.FileMode)) error {
	ents, err := os.ReadDir(h.path)
	for _, e := range ents {
		fn(e.Name(), e.Type())
	}
	return err
}

func openEntry(e Entry, _ bool) (*rawFile, error) {
	f, err := os.Open(e.Path)
	if err != nil {
		return nil, err
	}
	return &rawFile{f}, nil
}

func lstatEntry(e Entry) (time.Time, bool, error) {
	fi, err := os.Lstat(e.Path)
	if err != nil {
		return time.Time{}, false, err
	}
	return fi.ModTime(), fi.IsDir(), nil
}
