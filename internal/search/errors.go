package search

import "errors"

// ErrNotRegular is returned for a path that is not a regular file (a
// FIFO, a socket, a device): searching it could block forever.
var ErrNotRegular = errors.New("not a regular file")
