package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The repository extensions troupe models: the object format (SHA-1 and
// SHA-256 objects are hashed and written in Go alike), and per-worktree
// configuration (which already sends checkouts to git, confWhy).
var modelledExtensions = map[string]bool{
	"extensions.objectformat":   true,
	"extensions.worktreeconfig": true,
}

// unmodelledWhy names the first repository feature in the repository's
// own configuration conf that troupe's Go paths do not model, or "" when
// there is none: an extension other than those above (a reference
// storage such as reftable, a compatibility object format whose object
// map Go writes would not keep, a partial clone whose objects may be
// missing, ...), a repository format version above 1, or a split index.
// Such a repository takes git's own checkout and capture (which know
// what git knows) and the Repo says so once (Note).
func unmodelledWhy(conf map[string]confValue) string {
	var ext []string
	for key := range conf {
		if strings.HasPrefix(key, "extensions.") && !modelledExtensions[key] {
			ext = append(ext, key)
		}
	}
	if len(ext) > 0 {
		slices.Sort(ext)
		return "the repository uses " + strings.Join(ext, ", ")
	}
	if v, ok := conf["core.repositoryformatversion"]; ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v.val)); err != nil || n > 1 {
			return "the repository's format version is " + v.val
		}
	}
	if v, ok := conf["core.splitindex"]; ok && v.isTrue() {
		return "the repository uses a split index (core.splitIndex)"
	}
	return ""
}

// Note is a one-line note on how the Repo works that its user should
// know, "" when there is none: a repository feature troupe does not
// model, for which it leaves checkouts and captures to git.
func (r *Repo) Note() string {
	if r.unmodelled == "" {
		return ""
	}
	return "workspace " + r.root + ": " + r.unmodelled + ", which troupe does not model: worktrees are checked out and captured by git itself"
}

// gitBelow reports whether dir or a directory above it holds a .git (a
// directory or a file): a repository is there, whether or not git can
// read it.
func gitBelow(dir string) bool {
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return true
		}
		up := filepath.Dir(dir)
		if up == dir {
			return false
		}
		dir = up
	}
}

// unreadableRepo is the error of a workspace inside a repository git
// cannot read (an extension this git does not know, a format too new,
// ownership it refuses): troupe acts on none of it, rather than take
// the directory for one without git.
func unreadableRepo(root string, err error) error {
	return fmt.Errorf("open workspace %s: it is inside a git repository that git cannot read, so troupe leaves it alone (nothing is snapshotted or written): %w", root, err)
}
