//go:build !linux

package search

import (
	"os"
	"time"
)

// rawFile is an *os.File where plain system calls are not available.
type rawFile struct{ *os.File }

func openFile(path string, _ bool) (*rawFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &rawFile{f}, nil
}

func (f *rawFile) modTime() (time.Time, error) {
	fi, err := f.Stat()
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}
