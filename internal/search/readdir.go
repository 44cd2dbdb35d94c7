package search

import (
	"io/fs"
	"os"
)

// Dirent is one entry of a directory listing: its name and type bits.
type Dirent struct {
	Name string
	Type fs.FileMode // type bits only, as in Entry.Type
}

// ReadDir lists the open directory f, "." and ".." left out, in the
// order the file system gives. Unlike File.ReadDir on a file opened in an
// os.Root, it stats no entry whose type the directory itself reports.
// With an error it returns what it read before.
func ReadDir(f *os.File) ([]Dirent, error) {
	var out []Dirent
	err := listFile(f, func(name string, typ fs.FileMode) {
		out = append(out, Dirent{Name: name, Type: typ})
	})
	return out, err
}
