package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Read-only trees beneath a writable one (Policy.ReadOnly: a workspace's
// .git and .troupe). Landlock only grants, and a grant on a folder covers
// everything beneath it, so a hole cannot be carved out of a writable
// workspace by Landlock rules alone without taking from the workspace
// too. Two ways keep them, the first wherever it can be had:
//
//   - A mount namespace of the command's own, where each hole is bound
//     read-only onto itself (mount propagation to the host cut first).
//     The command writes everywhere else in the workspace as before;
//     writing, creating, renaming or removing anything in a hole, or the
//     hole itself (a mount point), fails with "Read-only file system" or
//     "Device or resource busy". Landlock and the seccomp filter then
//     keep the command from unmounting or remounting it. This process
//     makes the namespace on the thread that starts the command when it
//     may (CAP_SYS_ADMIN, Support.ThreadMountNS); otherwise the command
//     starts through the launcher in new user and mount namespaces.
//   - Landlock alone (no mount namespace to be had, or one that could
//     not be set up): the write grant on a writable tree that holds a
//     hole is split, as the read grants are around denied paths (see
//     readGrants): every entry of the tree is granted except the holes,
//     and a folder above a hole is split again. The folders so split get
//     no write right of their own: a command cannot create, rename or
//     remove entries directly in them (the workspace's top folder), only
//     beneath; the file tools, which run in troupe, still can.
//
// A hole that does not exist when the command starts is not kept (there
// is nothing to bind, and no entry to leave out): a command may create a
// .git in a workspace that has none.

// holes are the paths of p.ReadOnly that exist and lie beneath one of
// p.Writable (a hole elsewhere is read-only already). A hole that is a
// symbolic link stands for its target (the link itself, in a writable
// folder, can be replaced).
func (p Policy) holes() []string {
	var out []string
	for _, h := range p.ReadOnly {
		fi, err := os.Lstat(h)
		if err != nil {
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if h, err = filepath.EvalSymlinks(h); err != nil {
				continue
			}
		}
		if h = filepath.Clean(h); beneathAny(h, p.Writable) {
			out = append(out, h)
		}
	}
	return out
}

// namedHoles are the paths of p.ReadOnly beneath one of p.Writable, as
// written, whether they exist or not (holes, for a command whose tree
// this process cannot look at).
func (p Policy) namedHoles() []string {
	var out []string
	for _, h := range p.ReadOnly {
		if h = filepath.Clean(h); beneathAny(h, p.Writable) {
			out = append(out, h)
		}
	}
	return out
}

// splitWrites returns p with its writable trees split around holes (see
// above): Landlock's write grants then miss the holes.
func (p Policy) splitWrites(holes []string) Policy {
	var w []string
	for _, root := range p.Writable {
		if !aboveAny(root, holes) && !beneathAny(root, holes) {
			w = append(w, root)
			continue
		}
		if beneathAny(root, holes) {
			continue // a writable tree inside a hole: the hole wins
		}
		w = append(w, splitAround(root, holes)...)
	}
	p.Writable = w
	return p
}

// splitAround lists the entries of dir to grant so that every path
// beneath dir is granted except the holes: entries that are not a hole
// and hold none, and, recursively, those of folders holding one. Links
// are left out: a grant on a link is a grant on its target.
func splitAround(dir string, holes []string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case beneathAny(p, holes), e.Type()&fs.ModeSymlink != 0:
		case aboveAny(p, holes) && e.IsDir():
			out = append(out, splitAround(p, holes)...)
		case e.IsDir() || e.Type().IsRegular():
			out = append(out, p)
		}
	}
	return out
}
