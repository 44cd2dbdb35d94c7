package workspace

import (
	"bytes"
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// This file is the reference the Go merge (merge.go) is held to: git's
// own three-way merge of trees, git merge-tree --write-tree (git ≥
// 2.38), without rename detection (the Go merge has none: a changeset's
// paths are merged one by one).

// mergeCase is one path's three versions (an absent version has no
// mode).
type mergeCase struct {
	path               string
	base, ours, theirs version
	// oursPath and theirsPath are where a side put its version when it
	// renamed the file ("": path).
	oursPath, theirsPath string
}

// side is the path and version of the case's side which (base, ours or
// theirs).
func (c mergeCase) side(which string) (string, version) {
	switch which {
	case "ours":
		return cmp.Or(c.oursPath, c.path), c.ours
	case "theirs":
		return cmp.Or(c.theirsPath, c.path), c.theirs
	}
	return c.path, c.base
}

// gitIn runs git in dir as sh does, with stdin and extra environment,
// and returns its output and exit code (failing tb when git could not
// run or ended with 128 or more).
func gitIn(tb testing.TB, dir string, stdin []byte, env []string, args ...string) (string, int) {
	tb.Helper()
	cmd := exec.Command("git", append([]string{"-c", "core.quotePath=false", "-c", "merge.renames=false"}, args...)...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_AUTHOR_DATE=@0 +0000", "GIT_COMMITTER_DATE=@0 +0000")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() > 0 && ee.ExitCode() < 128 {
		code = ee.ExitCode()
	} else if err != nil {
		tb.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), code
}

// blobID is git's SHA-1 blob ID of data.
func blobID(data []byte) string {
	h := sha1.New()
	h.Write([]byte("blob " + strconv.Itoa(len(data)) + "\x00"))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// refMerge is git's merge of one case set: each path's result (mode and
// blob ID; absent: not in the map) and the paths git says conflict.
type refMerge struct {
	result       map[string][2]string
	conflicts    map[string]bool
	ours, theirs string // the commits merged
}

// gitMergeTree merges cases with git merge-tree --write-tree in a
// scratch repository at dir (made when new): commits of the base, ours
// and theirs, ours and theirs children of the base.
func gitMergeTree(tb testing.TB, dir string, cases []mergeCase) refMerge {
	tb.Helper()
	return gitMergeTreeOpts(tb, dir, cases, false)
}

// gitMergeTreeOpts is gitMergeTree, with rename detection when renames.
func gitMergeTreeOpts(tb testing.TB, dir string, cases []mergeCase, renames bool) refMerge {
	tb.Helper()
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		gitIn(tb, dir, nil, nil, "init", "-q", "--bare", dir)
	}
	commit := func(which string, parent string) string {
		var info strings.Builder
		for _, c := range cases {
			if p, v := c.side(which); v.exists() {
				id, _ := gitIn(tb, dir, v.data, nil, "hash-object", "-w", "--no-filters", "--stdin")
				fmt.Fprintf(&info, "%s %s\t%s\n", v.mode, strings.TrimSpace(id), p)
			}
		}
		idx := []string{"GIT_INDEX_FILE=" + filepath.Join(dir, "scratch-index")}
		_ = os.Remove(filepath.Join(dir, "scratch-index"))
		gitIn(tb, dir, []byte(info.String()), idx, "update-index", "--index-info")
		tree, _ := gitIn(tb, dir, nil, idx, "write-tree")
		args := []string{"commit-tree", "-m", "side", strings.TrimSpace(tree)}
		if parent != "" {
			args = append(args, "-p", parent)
		}
		id, _ := gitIn(tb, dir, nil, nil, args...)
		return strings.TrimSpace(id)
	}
	base := commit("base", "")
	ours := commit("ours", base)
	theirs := commit("theirs", base)
	out, code := gitIn(tb, dir, nil, nil, "-c", "merge.renames="+strconv.FormatBool(renames), "merge-tree", "--write-tree", ours, theirs)
	lines := strings.Split(out, "\n")
	ref := refMerge{result: map[string][2]string{}, conflicts: map[string]bool{}, ours: ours, theirs: theirs}
	for _, l := range lines[1:] {
		if l == "" {
			break
		}
		if _, path, ok := strings.Cut(l, "\t"); ok {
			ref.conflicts[path] = true
		}
	}
	if (code == 1) != (len(ref.conflicts) > 0) {
		tb.Fatalf("git merge-tree exit %d with conflicts %v:\n%s", code, ref.conflicts, out)
	}
	ls, _ := gitIn(tb, dir, nil, nil, "ls-tree", "-r", "-z", lines[0])
	for _, rec := range strings.Split(ls, "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		if f := strings.Fields(meta); ok && len(f) == 3 {
			ref.result[path] = [2]string{f[0], f[2]}
		}
	}
	return ref
}

// describe shows a version for a failure.
func (v version) describe() string {
	if !v.exists() {
		return "absent"
	}
	return fmt.Sprintf("%s %q", v.mode, clipBytes(v.data, 60))
}

func clipBytes(b []byte, n int) []byte {
	if len(b) > n {
		return append(b[:n:n], "..."...)
	}
	return b
}
