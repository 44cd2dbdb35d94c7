//go:build !unix

package tools

import (
	"os"
	"time"
)

// lchtimes sets the times of p; without lutimes, a link's own time is left.
func lchtimes(p string, mt time.Time) error {
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil
	}
	return os.Chtimes(p, mt, mt)
}
