package workspace

import (
	"errors"
	"fmt"
	"path"

	"golang.org/x/sys/unix"
)

// A killed process's worktree is read before Prune keeps its work: what
// an agent wrote there is input, so it is walked with the *at system
// calls from the directory Prune opened, following no symbolic link,
// and every entry git could block on or cannot track (a fifo, a socket,
// a device) is removed before git runs in it (git opens a .gitignore
// or .gitattributes it finds, and a fifo there would never answer). An
// overlay worktree's upper directory says what its agent touched: its
// whiteouts (character devices 0/0) are deletions, its opaque
// directories hide the whole lower directory.

// maxDeadDepth bounds the directories the walk descends into.
const maxDeadDepth = 256

// deadScan is what the walk of a dead worktree found.
type deadScan struct {
	present map[string]bool // files and symlinks (overlay: those in the upper)
	dirs    map[string]bool // directories (overlay: those in the upper)
	opaque  map[string]bool // an upper's opaque directories
	gone    map[string]bool // an upper's whiteouts
	over    []string        // regular files over the size limit
	sizes   map[string]int64
	removed []string // special files removed
}

// scanDead walks the directory top (an upper directory when upper),
// removing special files; files over limit bytes are listed in over.
func scanDead(top *dirFD, upper bool, limit int64) (*deadScan, error) {
	s := &deadScan{present: map[string]bool{}, dirs: map[string]bool{}, opaque: map[string]bool{},
		gone: map[string]bool{}, sizes: map[string]int64{}}
	return s, s.walk(top, "", upper, limit, 0)
}

// walk scans the directory d, at rel below the top.
func (s *deadScan) walk(d *dirFD, rel string, upper bool, limit int64, depth int) error {
	if depth > maxDeadDepth {
		return fmt.Errorf("%s: deeper than %d directories", rel, maxDeadDepth)
	}
	names, err := d.f.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, name := range names {
		p := path.Join(rel, name)
		if rel == "" && name == ".git" {
			continue // troupe's .git file (or one the agent made): git never takes it
		}
		st, err := d.lstat(name)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			sub, err := d.sub(name, false)
			if err != nil {
				return err
			}
			s.dirs[p] = true
			if upper && opaqueDir(sub.fd()) {
				s.opaque[p] = true
			}
			err = s.walk(sub, p, upper, limit, depth+1)
			sub.close()
			if err != nil {
				return err
			}
		case unix.S_IFREG:
			s.present[p] = true
			if limit > 0 && st.Size > limit {
				s.over, s.sizes[p] = append(s.over, p), st.Size
			}
		case unix.S_IFLNK:
			s.present[p] = true
		case unix.S_IFCHR:
			if upper && st.Rdev == 0 {
				s.gone[p] = true
				continue
			}
			fallthrough
		default:
			if err := d.remove(name); err != nil {
				return err
			}
			s.removed = append(s.removed, p)
		}
	}
	return nil
}

// opaqueDir reports whether the directory fd of an upper is opaque
// (overlay's user.overlay.opaque for an unprivileged mount, its
// trusted.overlay.opaque as root).
func opaqueDir(fd int) bool {
	buf := make([]byte, 8)
	for _, attr := range []string{"user.overlay.opaque", "trusted.overlay.opaque"} {
		if n, err := unix.Fgetxattr(fd, attr, buf); err == nil && n == 1 && buf[0] == 'y' {
			return true
		}
	}
	return false
}

// hiddenBelow reports whether the lower file p is hidden by the upper:
// a whiteout or an opaque directory above it, or a non-directory where
// one of its directories was.
func (s *deadScan) hiddenBelow(p string) bool {
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if s.opaque[dir] || s.gone[dir] || s.present[dir] {
			return true
		}
	}
	return false
}

// lowerEntry says what the upper does with the snapshot's file p: it
// is gone (a whiteout), looked at (in the upper, or its lower copy
// hidden: git add sees it as the merged view would) or untouched (git
// takes it from the snapshot: skip-worktree).
func (s *deadScan) lowerEntry(p string) (gone, untouched bool) {
	switch {
	case s.gone[p]:
		return true, false
	case s.present[p] || s.dirs[p] || s.hiddenBelow(p):
		return false, false
	}
	return false, true
}
