package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DataDirName is the workspace's folder of agent-visible troupe files
// (worktrees, spilled outputs): <workspace>/.troupe.
const DataDirName = ".troupe"

// Gitignore is what troupe writes to .troupe/.gitignore when it makes
// the folder: nothing in it is for the user's repository.
const Gitignore = "# written by troupe: nothing in this folder belongs in the repository\n*\n"

// ErrLink: a path troupe opens in an agent-writable tree is a symbolic
// link, or not a directory; troupe never follows one there.
var ErrLink = errors.New("is a symbolic link or not a directory; troupe does not follow links in an agent-writable tree")

// OpenDir opens the directory rel (relative, slash- or OS-separated)
// beneath root one component at a time, creating the missing ones with
// perm (perm 0: a missing one is fs.ErrNotExist). A component that is a symbolic link or not a directory is
// refused (ErrLink), and one swapped for another between the check and
// the open is refused too, so nothing an agent planted redirects it.
func OpenDir(root *os.Root, rel string, perm fs.FileMode) (*os.Root, error) {
	cur, err := root.OpenRoot(".")
	if err != nil {
		return nil, err
	}
	for _, c := range strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/") {
		if c == "." || c == "" {
			continue
		}
		if c == ".." {
			cur.Close()
			return nil, fmt.Errorf("open %s: %w", rel, os.ErrInvalid)
		}
		next, err := openChild(cur, c, perm)
		cur.Close()
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", rel, err)
		}
		cur = next
	}
	return cur, nil
}

// openChild opens (making it when missing) the directory name of parent,
// refusing a link and a swap.
func openChild(parent *os.Root, name string, perm fs.FileMode) (*os.Root, error) {
	fi, err := parent.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) && perm != 0 {
		if err = parent.Mkdir(name, perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		fi, err = parent.Lstat(name)
	}
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s %w", name, ErrLink)
	}
	sub, err := parent.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	got, err := sub.Stat(".")
	if err != nil || !os.SameFile(fi, got) {
		sub.Close()
		return nil, fmt.Errorf("%s changed while it was opened: %w", name, ErrLink)
	}
	return sub, nil
}

// OpenData opens the workspace's data folder (<workspace>/.troupe; made
// 0755 when missing, with its .gitignore) without following a link, and
// returns it. A data folder elsewhere (dataDir not beneath workspace) is
// made as it is and opened.
func OpenData(workspace, dataDir string) (*os.Root, error) {
	rel, ok := beneath(workspace, dataDir)
	if !ok {
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return nil, fmt.Errorf("data folder: %w", err)
		}
		return os.OpenRoot(dataDir)
	}
	ws, err := os.OpenRoot(workspace)
	if err != nil {
		return nil, fmt.Errorf("data folder: %w", err)
	}
	defer ws.Close()
	d, err := OpenDir(ws, rel, 0o755)
	if err != nil {
		return nil, fmt.Errorf("data folder: %w", err)
	}
	if err := writeGitignore(d); err != nil {
		d.Close()
		return nil, fmt.Errorf("data folder: %w", err)
	}
	return d, nil
}

// PrepareData makes the workspace's data folder (see OpenData).
func PrepareData(workspace, dataDir string) error {
	d, err := OpenData(workspace, dataDir)
	if err != nil {
		return err
	}
	return d.Close()
}

// writeGitignore writes Gitignore in d unless a .gitignore is there (a
// link there is left alone, never written through).
func writeGitignore(d *os.Root) error {
	if _, err := d.Lstat(".gitignore"); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	f, err := d.OpenFile(".gitignore", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(Gitignore); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// beneath is dataDir relative to workspace, and whether it lies strictly
// beneath it.
func beneath(workspace, dataDir string) (string, bool) {
	rel, err := filepath.Rel(workspace, dataDir)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}
