package tools

import (
	"fmt"
	"io/fs"
)

// fileKind names a non-regular file's type in words.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file"
}

// notRegularError refuses a file that is not a regular file (nor a
// directory), saying what it is: "sock is a socket, not a regular file".
type notRegularError struct {
	path string // as shown to the model
	mode fs.FileMode
}

func (e *notRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.path, fileKind(e.mode))
}
