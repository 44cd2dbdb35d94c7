package workspace

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/troupe-ai/troupe/tools/sandbox"
)

// A confined filter runs as git runs it, with GIT_DIR set, but never
// with the repository's own git directory: its config is the agent's
// to write (a url, a storage path, an ssh command or a custom transfer
// program git-lfs would follow). GIT_DIR names instead a git directory
// troupe makes in the filter's private directory, its config holding
// only what troupe says (filterGitConfig); the user's global config
// reaches the filter as it reaches troupe's own git (GIT_CONFIG_GLOBAL,
// XDG_CONFIG_HOME, HOME), the system's does not.
//
// Git LFS (a driver named lfs, as git lfs install and git lfs track
// write it) stores what its clean reads and finds what its smudge
// writes in its storage directory: for a checkout, the user's
// <common git directory>/lfs, the one directory of the repository's
// git directory the filter may write (objects, and tmp for its
// partial files); for a workspace troupe keeps in a private repository,
// lfs in troupe's home. The config troupe writes names it as
// lfs.storage and sets no remote (lfs.url is a closed local path), so
// an object missing there is a filter error at once, never a download:
// the sandbox has no network anyway.

// lfsDriver is the name git lfs gives its filter driver.
const lfsDriver = "lfs"

// filterGit is the git directory a filter runs with and what it may
// write besides its private directory.
type filterGit struct {
	dir      string   // GIT_DIR
	writable []string // more trees it may write
}

// makeFilterGit makes the git directory of a filter of driver d run in
// tmp (its private directory), and for git lfs its storage directory.
func (r *Repo) makeFilterGit(tmp string, d filterDriver) (filterGit, error) {
	fg := filterGit{dir: filepath.Join(tmp, "git")}
	storage := ""
	if d.name == lfsDriver {
		var err error
		if storage, err = r.lfsStorage(); err != nil {
			return fg, err
		}
		fg.writable = append(fg.writable, storage)
	}
	for _, sub := range []string{"objects", "refs"} {
		if err := os.MkdirAll(filepath.Join(fg.dir, sub), 0o700); err != nil {
			return fg, err
		}
	}
	files := map[string]string{"HEAD": "ref: refs/heads/main\n", "config": r.filterGitConfig(storage)}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(fg.dir, name), []byte(data), 0o600); err != nil {
			return fg, err
		}
	}
	return fg, nil
}

// filterGitConfig is the config of a filter's git directory, git lfs's
// storage at storage ("" for none).
func (r *Repo) filterGitConfig(storage string) string {
	var b strings.Builder
	b.WriteString("[core]\n\tbare = false\n")
	if r.home.sha256 {
		b.WriteString("\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = sha256\n")
	} else {
		b.WriteString("\trepositoryformatversion = 0\n")
	}
	if storage != "" {
		// lfs.url is a local path that is never there: what .lfsconfig or
		// the user's global config names is not asked (the repository's
		// local config wins over both).
		fmt.Fprintf(&b, "[lfs]\n\tstorage = %s\n\turl = file://%s\n\tconcurrenttransfers = 1\n[lfs \"transfer\"]\n\tmaxretries = 0\n",
			quoteConf(storage), quoteConf(filepath.Join(storage, "no-remote")))
	}
	return b.String()
}

// quoteConf quotes s as a git config value.
func quoteConf(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// lfsStorage is git lfs's storage directory of r (see above), made when
// it is missing, its objects and tmp in it; an error when it is not a
// directory (a symlink is not followed).
func (r *Repo) lfsStorage() (string, error) {
	dir := r.lfsDir()
	for _, p := range []string{dir, filepath.Join(dir, "objects"), filepath.Join(dir, "tmp")} {
		if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("git lfs storage: %w", err)
		}
		if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("git lfs storage: %s is not a directory", p)
		}
	}
	return dir, nil
}

// lfsDir is the path of git lfs's storage directory of r (lfsStorage
// makes it).
func (r *Repo) lfsDir() string {
	base := r.common
	if base == "" {
		base = r.home.dir
	}
	return filepath.Join(base, "lfs")
}

// confined is how one run of a filter is confined.
type confined struct {
	policy sandbox.Policy
	env    []string
	dir    string // where it runs
	done   func() // removes its private directory
}

// confineFilter prepares a run of a filter of driver d: its private
// directory, its sandbox, its environment and where it runs: the work
// tree's top as git runs it, or its private directory for an overlay
// worktree (c.viewOnly), whose merged view this process reaches by a
// path (/proc/<holder>/root/…) no filter could work in. The error says
// why it cannot run confined.
func (c *converter) confineFilter(d filterDriver, path string) (confined, error) {
	tmp, err := os.MkdirTemp(c.r.home.tmpDir(), c.r.home.tmpName("filter"))
	if err != nil {
		return confined{}, fmt.Errorf("run the filter of %s: %w", path, err)
	}
	run := confined{dir: cmp.Or(c.at, c.r.at), done: func() { os.RemoveAll(tmp) }}
	if c.viewOnly {
		run.dir = tmp
	}
	fg, err := c.r.makeFilterGit(tmp, d)
	if err != nil {
		run.done()
		return confined{}, fmt.Errorf("run the filter of %s: %w", path, err)
	}
	p, why := filterPolicy(append([]string{tmp}, fg.writable...))
	if why != "" {
		run.done()
		return confined{}, fmt.Errorf("run the filter of %s: the sandbox cannot be enforced here: %s", path, why)
	}
	run.policy, run.env = p, filterEnv(tmp, fg.dir)
	return run, nil
}
