package workspace

import (
	"io/fs"
	"path"

	"golang.org/x/sys/unix"
)

// An agent's worktree may hold entries git cannot track and would block
// on: a fifo named .gitignore or .gitattributes is opened by git add as
// it walks, and a read of it never returns (the capture then waited for
// its deadline, five minutes, and failed). Before git, or troupe's own
// capture, reads a worktree, dropSpecials removes every fifo, socket and
// device in it, walking it by descriptors without following links. A
// capture loses nothing by it: git takes none of them.

// dropSpecials removes the special files of the worktree as this process
// reaches it (an overlay worktree's merged view, where its upper's
// whiteouts do not show) and returns their paths. An overlay worktree's
// directories its agent touched nothing in are skipped, as its capture
// skips them (untouchedDir: the lower tree is troupe's checkout, which
// holds no special file). It is a best effort: a directory it cannot
// read (too deep, gone meanwhile) is left to git as it is. It holds one
// directory's names at a time.
func (w *Worktree) dropSpecials() []string {
	top, err := openBeneath(w.Dir(), ".", false)
	if err != nil {
		return nil
	}
	defer top.close()
	var removed []string
	dropSpecialsIn(top, "", 0, w.untouchedDir(), &removed)
	return removed
}

// dropSpecialsIn is dropSpecials in the directory d, at rel; untouched
// (nil for a checkout) says which directories to skip.
func dropSpecialsIn(d *dirFD, rel string, depth int, untouched func(string) bool, removed *[]string) {
	if depth > maxDeadDepth {
		return
	}
	entries, err := d.f.ReadDir(-1)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		switch t := e.Type(); {
		case rel == "" && name == ".git":
			// troupe's .git file: git never reads it as a tree
		case t.IsDir():
			if untouched != nil && untouched(path.Join(rel, name)) {
				continue
			}
			if sub, err := d.sub(name, false); err == nil {
				dropSpecialsIn(sub, path.Join(rel, name), depth+1, untouched, removed)
				sub.close()
			}
		case t&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0:
			if st, err := d.lstat(name); err != nil || st.Mode&unix.S_IFMT == unix.S_IFREG || st.Mode&unix.S_IFMT == unix.S_IFDIR ||
				st.Mode&unix.S_IFMT == unix.S_IFLNK {
				continue // gone or no longer special: git reads it as it is
			}
			if d.remove(name) == nil {
				*removed = append(*removed, path.Join(rel, name))
			}
		}
	}
}
