//go:build !linux

package workspace

import "errors"

// dirWatch watches nothing here: a restore scans the worktree again.
type dirWatch struct{}

func watchTracked(string, *manifest) (*dirWatch, error) {
	return nil, errors.New("no inotify on this system")
}

func (w *dirWatch) quiet() bool { return false }

func (w *dirWatch) close() {}
