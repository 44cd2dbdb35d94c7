//go:build !linux

package search

import (
	"os"
	"time"
)

// rawFile is an *os.File where plain system calls are not available.
type rawFile struct{ *os.File }

func (f *rawFile) modTime() (time.Time, error) {
	fi, err := f.Stat()
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}
