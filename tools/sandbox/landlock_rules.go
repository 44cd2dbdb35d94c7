package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// readGrants are the paths whose trees get read and execute rights so
// that everything is readable except beneath denied. Landlock can only
// grant, so the grant on "/" is split around each denied path: a
// directory with a denied path strictly beneath it is not granted as a
// whole; each of its entries is, except the denied ones, recursively.
// Entries created in such a directory after the command started (a new
// file directly in $HOME) are therefore not readable to it.
//
// A symlink is granted only when its target is neither denied nor above a
// denied path (a grant on a symlink is a grant on its target). Denied
// paths are taken both as written and with their symlinks resolved.
func readGrants(denied []string) []string {
	g, _, _ := walkGrants(denied)
	return g
}

// walkGrants is readGrants, also returning the directories it listed and
// their modification times, read before they were listed.
func walkGrants(denied []string) (grants, listed []string, mtimes []time.Time) {
	deny := resolveAll(denied)
	if len(deny) == 0 {
		return []string{"/"}, nil, nil
	}
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		var mt time.Time
		if fi, err := os.Stat(dir); err == nil {
			mt = fi.ModTime()
		}
		listed, mtimes = append(listed, dir), append(mtimes, mt)
		entries, err := os.ReadDir(dir)
		if err != nil {
			return // unreadable to us: nothing to grant
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			switch {
			case beneathAny(p, deny):
			case e.Type()&fs.ModeSymlink != 0:
				if t, err := filepath.EvalSymlinks(p); err == nil && !beneathAny(t, deny) && !aboveAny(t, deny) {
					out = append(out, p)
				}
			case aboveAny(p, deny):
				if e.IsDir() {
					walk(p)
				}
			default:
				out = append(out, p)
			}
		}
	}
	if beneathAny("/", deny) {
		return nil, nil, nil
	}
	walk("/")
	return out, listed, mtimes
}

// aboveAny reports whether a path of list lies strictly beneath dir.
func aboveAny(dir string, list []string) bool {
	for _, p := range list {
		if p != dir && isBeneath(p, dir) {
			return true
		}
	}
	return false
}

// resolveAll returns each path cleaned, and also with the symlinks of
// its longest existing prefix resolved when that differs.
func resolveAll(paths []string) []string {
	var out []string
	for _, p := range paths {
		p = filepath.Clean(p)
		out = append(out, p)
		if r := resolvePrefix(p); r != p {
			out = append(out, r)
		}
	}
	return out
}

// resolvePrefix resolves the symlinks of the longest existing prefix of
// p and joins the rest.
func resolvePrefix(p string) string {
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest)
		}
		if !errors.Is(err, fs.ErrNotExist) || cur == filepath.Dir(cur) {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}
