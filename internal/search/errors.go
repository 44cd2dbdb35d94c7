package search

import "errors"

// ErrNotRegular is returned for a path that is not a regular file (a
// FIFO, a socket, a device): searching it could block forever.
var ErrNotRegular = errors.New("not a regular file")

// ErrOutsideRoot is returned for a target path outside its root.
var ErrOutsideRoot = errors.New("path is outside the root")
