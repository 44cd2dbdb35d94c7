//go:build !linux

package workspace

import (
	"fmt"
	"os"
	"path/filepath"
)

// fileStat is what lstat says of a path, in the index's terms.
type fileStat struct {
	mode  uint32 // st_mode
	st    indexStat
	bytes int64 // st_size, whole
}

// lstatFile is Linux-only for now; elsewhere captures go through git.
func lstatFile(path string) (fileStat, error) {
	return fileStat{}, fmt.Errorf("%w: stat data on this system", errIndex)
}

// inode is unknown (0) here.
func inode(os.FileInfo) uint64 { return 0 }

// lstatIn lstats name in the directory at path abs.
func lstatIn(_ *os.File, abs, name string) (fileStat, error) {
	return lstatFile(filepath.Join(abs, name))
}
