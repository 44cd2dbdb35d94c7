package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// DefaultMaxBytes is the largest workspace that is not a git checkout
// that Snapshot copies, when Options.MaxBytes is zero.
const DefaultMaxBytes = 256 << 20

// Options configure a Repo.
type Options struct {
	// DataDir holds worktrees and the private repository of a workspace
	// that is not a git checkout; default <root>/.troupe.
	DataDir string
	// StateDir holds kept patches (runs/<run>/changes), troupe's own
	// files, out of the agents' reach; default DataDir.
	StateDir string
	// MaxBytes limits the size of a workspace that is not a git checkout;
	// default DefaultMaxBytes.
	MaxBytes int64
	// KeepIdle is how many removed worktrees are kept, checked out, to be
	// reused by the next NewWorktree (0: none; each is removed at once).
	// Reusing one rewrites only the files that differ, where a new one
	// writes every file of the tree. Close removes the idle ones.
	KeepIdle int
}

// Repo is a workspace and the git repository that holds its snapshots:
// the workspace's own repository, or a private bare one under the data
// directory when the workspace is not a git checkout. A Repo is safe for
// concurrent use.
type Repo struct {
	root    string // the workspace root, absolute, symlinks resolved
	top     string // the root of the work tree snapshots are taken of
	prefix  string // root relative to top, "" or slash-separated with a trailing slash
	dataDir string
	opts    Options
	private bool // no git checkout: snapshots live in a private repository
	g       git  // git in top, with GIT_DIR and GIT_WORK_TREE for a private repository
	admin   git  // git for worktree commands: in top, or GIT_DIR alone for a private repository
	lockDir string

	mu sync.Mutex // serialises worktree registration and applies within the process

	objOnce sync.Once
	obj     *objectReader // reads objects for applies; see objects

	idleMu sync.Mutex
	idle   []*Worktree // removed worktrees kept for reuse (Options.KeepIdle), some still being prepared
	latest Snapshot    // the latest snapshot taken, which parked worktrees are prepared for
	warmed int         // worktrees made by Prewarm, for their names

	checkout checkoutState // the last tree checked out in Go, and why Go may not (materialise.go)
}

// Open returns the Repo of the workspace at root.
func Open(ctx context.Context, root string, opts Options) (*Repo, error) {
	abs, err := filepath.Abs(root)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	if opts.DataDir == "" {
		opts.DataDir = filepath.Join(abs, ".troupe")
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	r := &Repo{root: abs, top: abs, dataDir: dataDir, opts: opts, g: git{dir: abs}}
	top, err := r.g.line(ctx, "rev-parse", "--show-toplevel")
	if errors.Is(err, ErrNoGit) {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	if err != nil || top == "" {
		return r, r.openPrivate(ctx)
	}
	r.top = top
	if rel, err := filepath.Rel(top, abs); err == nil && rel != "." {
		r.prefix = filepath.ToSlash(rel) + "/"
	}
	r.g = git{dir: top}
	r.admin = r.g
	common, err := r.g.line(ctx, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	r.lockDir = common
	if err := r.writeExcludes(); err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	return r, nil
}

// openPrivate makes r use a private bare repository under the data
// directory, creating it the first time.
func (r *Repo) openPrivate(ctx context.Context) error {
	r.private = true
	bare := filepath.Join(r.dataDir, "workspace.git")
	r.g = git{dir: r.root, gitDir: bare, workTree: r.root}
	r.admin = git{dir: r.dataDir, gitDir: bare}
	r.lockDir = bare
	if _, err := os.Stat(filepath.Join(bare, "HEAD")); err == nil {
		return nil
	}
	if err := os.MkdirAll(r.dataDir, 0o755); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if _, err := (git{dir: r.dataDir}).run(ctx, nil, "init", "-q", "--bare", bare); err != nil {
		return fmt.Errorf("create private repository: %w", err)
	}
	return nil
}

// Root is the workspace root.
func (r *Repo) Root() string { return r.root }

// DataDir is the directory holding worktrees.
func (r *Repo) DataDir() string { return r.dataDir }

// IsGit reports whether the workspace is a git checkout (false: its
// snapshots live in a private repository).
func (r *Repo) IsGit() bool { return !r.private }

// lock takes the per-repository lock named name: the process's mutex and
// an exclusive flock on a file in the repository's git directory, so
// processes sharing the repository take turns too. The returned function
// releases both.
func (r *Repo) lock(name string) (func(), error) {
	r.mu.Lock()
	unlock, err := flock(filepath.Join(r.lockDir, "troupe-"+name+".lock"))
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	return func() {
		unlock()
		r.mu.Unlock()
	}, nil
}

// flock takes an exclusive flock on the file at path (created if need
// be), waiting for any other holder, and returns its release.
func flock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock repository: %w", err)
	}
	return func() { f.Close() }, nil // closing releases the flock
}

// writeExcludes writes the ignore file that keeps the data directory
// (and any .troupe directory at the top) out of snapshots and captures,
// and makes r's git commands read it (core.excludesFile). An ignore rule,
// unlike an exclude pathspec, is not an error when the user's own
// .gitignore names the directory too.
func (r *Repo) writeExcludes() error {
	rules := "/.troupe/\n"
	if rel, err := filepath.Rel(r.top, r.dataDir); err == nil && !strings.HasPrefix(rel, "..") && rel != "." && rel != ".troupe" {
		rules += "/" + filepath.ToSlash(rel) + "/\n"
	}
	if err := os.MkdirAll(r.dataDir, 0o755); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	path := filepath.Join(r.dataDir, "snapshot-excludes")
	if cur, err := os.ReadFile(path); err != nil || string(cur) != rules {
		if err := os.WriteFile(path, []byte(rules), 0o644); err != nil {
			return fmt.Errorf("write excludes: %w", err)
		}
	}
	r.g.conf = []string{"-c", "core.excludesFile=" + path}
	return nil
}

// tempIndex returns the path of a new index file under the data
// directory and a function that removes it.
func (r *Repo) tempIndex() (string, func(), error) {
	dir := filepath.Join(r.dataDir, "tmp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("create temp dir: %w", err)
	}
	f, err := os.CreateTemp(dir, "index-*")
	if err != nil {
		return "", nil, fmt.Errorf("create temp index: %w", err)
	}
	name := f.Name()
	f.Close()
	os.Remove(name) // git wants to create it (an empty file is not an index)
	return name, func() { os.Remove(name); os.Remove(name + ".lock") }, nil
}
