package testfiles

import (
	"bytes"
	"os/exec"
	"slices"
)

// TreeState is what git status shows of the checkout at root: changed,
// untracked and ignored paths (with their status), a directory git does
// not track standing for everything in it; nil when root is not a
// checkout.
// A test binary compares it before and after its tests (LeftInTree):
// tests write in their temporary directories, never in the source tree.
func TreeState(root string) map[string]bool {
	out, err := exec.Command("git", "-C", root, "status", "--porcelain=v1", "-z", "--ignored=traditional",
		"--untracked-files=normal").Output()
	if err != nil {
		return nil
	}
	paths := map[string]bool{}
	for e := range bytes.SplitSeq(out, []byte{0}) {
		if len(e) > 0 {
			paths[string(e)] = true
		}
	}
	return paths
}

// LeftInTree are the entries of TreeState(root) that were not there when
// before was taken, sorted: what the tests in between left in the
// source tree; none when root is not a checkout.
func LeftInTree(root string, before map[string]bool) []string {
	if before == nil {
		return nil
	}
	var left []string
	for p := range TreeState(root) {
		if !before[p] {
			left = append(left, p)
		}
	}
	slices.Sort(left)
	return left
}
