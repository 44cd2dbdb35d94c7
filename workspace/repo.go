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
	// GitHome is where troupe keeps the git directories its own git
	// commands run against (home.go); it must be a directory no agent may
	// write. Default beside the per-user state directory
	// (statedir.GitRoot: ~/.local/state/troupe-git).
	GitHome string
	// MaxChangeBytes is the largest file a capture carries
	// (agent.max_change_bytes): a bigger one is left out of the
	// changeset and named in its Oversize. Default DefaultMaxChangeBytes.
	MaxChangeBytes int64
	// Worktrees is the kind of worktree NewWorktree makes
	// (agent.worktrees): WorktreesAuto (an overlay where the probe
	// passes), WorktreesOverlay or WorktreesCheckout; unset, the kind
	// SetDefaultWorktrees set, a checkout by default (overlay_worktree.go).
	Worktrees string
}

// Repo is a workspace and the git repository that holds its snapshots:
// the workspace's own repository, or a private one under the data
// directory when the workspace is not a git checkout. A Repo is safe for
// concurrent use.
type Repo struct {
	root    string // the workspace root, absolute, symlinks resolved
	top     string // the root of the work tree snapshots are taken of
	at      string // top as file operations and git name it (a worktree's: anchored to its directory)
	prefix  string // root relative to top, "" or slash-separated with a trailing slash
	dataDir string
	opts    Options
	private bool // no git checkout: snapshots live in a private repository
	// unmodelled names a repository feature troupe does not model
	// (repo_features.go); "" for none.
	unmodelled string

	tool   *gitTool
	home   *home  // the git directory troupe's commands run against
	gitDir string // the checkout's git directory (its HEAD and index); "" for a private repository or a store
	common string // the checkout's common git directory (mirrored into home)
	g      git    // git in home with top as its work tree
	refs   git    // git in the checkout's own git directory, for its refs only (see git.go)

	// shallowOf is, for a store, the common git directory of the
	// checkout it borrows objects from: its shallow list is mirrored
	// (store_shallow.go).
	shallowOf string

	// The trusted directory the data directory is reached from without
	// following a symlink: the workspace root when the data directory is
	// inside it, else the data directory itself.
	dataBase, dataRel string

	mu sync.Mutex // serialises applies within the process
	// landing is held by a land while it writes the work tree, and
	// shared by snapshots while they read it: no snapshot sees half a
	// changeset, or a land's temporary files (snapshot_shared.go).
	landing sync.RWMutex
	view    userView // the rename route's view of the work tree (merge_renames_view.go), under the apply lock

	objOnce sync.Once
	obj     *objectReader // reads objects for applies; see objects

	idleMu sync.Mutex
	idle   []*Worktree // removed worktrees kept for reuse (Options.KeepIdle), some still being prepared
	latest Snapshot    // the latest snapshot taken, which parked worktrees are prepared for
	warmed int         // worktrees made by Prewarm, for their names

	lowers lowers // the lower trees of overlay worktrees, by snapshot
	snaps  snaps  // snapshots being taken, which callers share (snapshot_shared.go)

	checkout checkoutState // the last tree checked out in Go, and why Go may not (materialise.go)

	conv       userConv // what of the user's global config converts files (merge_convert.go)
	userIgnore string   // the user's global ignore file (excludes.go); "" for none
	excludes   string   // the ignore file troupe's git reads, in the home
}

// Open returns the Repo of the workspace at root. A worktree this
// process handed to an agent opens with the git directory troupe made
// for it; any other directory is looked up by git once, here.
func Open(ctx context.Context, root string, opts Options) (*Repo, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	if w := liveWorktree(abs); w != nil {
		return w.openWorkspace(ctx, abs, opts)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	r, err := blankRepo(abs, abs, opts)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	found, err := discover(ctx, r.tool, abs)
	if errors.Is(err, ErrNoGit) {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	if err != nil && gitBelow(abs) {
		return nil, unreadableRepo(root, err)
	}
	if err != nil {
		return r, r.openPrivate(ctx)
	}
	r.top, r.at, r.gitDir, r.common = found.top, found.top, found.gitDir, found.common
	if rel, err := filepath.Rel(found.top, abs); err == nil && rel != "." {
		r.prefix = filepath.ToSlash(rel) + "/"
	}
	r.refs = git{tool: r.tool, gitDir: r.gitDir}
	conf, err := r.refs.run(ctx, nil, "config", "-z", "--list")
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	userConf := parseConfigList(conf)
	r.unmodelled = unmodelledWhy(userConf)
	if r.home, err = openHome(opts.GitHome, found.objects, nil, found.format, userConf, r.tool, abs, r.top); err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	if err := r.home.mirror(r.common); err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	if err := r.home.mirrorRefs(ctx, r.refs); err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	r.g = r.home.git()
	r.g.workTree, r.g.dir = r.top, r.top
	r.userIgnore = r.userExcludesFile(ctx)
	if err := r.writeExcludes(); err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	// The user's core.autocrlf and core.eol decide how the user's files
	// are read and written (merge_convert.go).
	r.conv = r.readUserConv(ctx)
	r.g.conf = append(r.g.conf, r.conv.conf...)
	if err := r.recoverOnOpen(); err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	return r, nil
}

// maxChange is the largest file a capture carries.
func (r *Repo) maxChange() int64 {
	if r.opts.MaxChangeBytes > 0 {
		return r.opts.MaxChangeBytes
	}
	return DefaultMaxChangeBytes
}

// blankRepo is a Repo of the workspace root (resolved) with top as its
// work tree, its options defaulted and its data directory placed: below
// root, or one of trusted (directories no agent may replace), when it is
// inside, else made where it is.
func blankRepo(root, top string, opts Options, trusted ...string) (*Repo, error) {
	if opts.DataDir == "" {
		opts.DataDir = filepath.Join(root, ".troupe")
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, err
	}
	r := &Repo{root: root, top: top, at: top, dataDir: dataDir, opts: opts, tool: findGit(append([]string{root, top}, trusted...)...)}
	r.dataBase, r.dataRel = anchor(root, dataDir, trusted...)
	if r.dataRel == "." {
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// anchor is the trusted directory dir is reached from (base) and dir's
// path below it (rel, "." for base itself): root (or one of more roots)
// when dir is inside it, as written or with root's symlinks resolved,
// else dir.
func anchor(root, dir string, more ...string) (base, rel string) {
	var roots []string
	for _, r := range append([]string{root}, more...) {
		roots = append(roots, r)
		if real, err := filepath.EvalSymlinks(r); err == nil && real != r {
			roots = append(roots, real)
		}
	}
	for _, r := range roots {
		if rel, err := filepath.Rel(r, dir); err == nil && filepath.IsLocal(rel) {
			return r, rel
		}
	}
	return dir, "."
}

// found is what git says of the checkout holding a directory.
type found struct {
	top, gitDir, common, objects, format string
}

// discover asks git which checkout holds dir: the one time git looks
// for a repository itself (a workspace given by the user). It reads the
// repository's config, and runs nothing it names.
func discover(ctx context.Context, tool *gitTool, dir string) (found, error) {
	g := git{tool: tool, dir: dir, discover: true}
	out, err := g.run(ctx, nil, "rev-parse", "--path-format=absolute", "--show-toplevel", "--absolute-git-dir",
		"--git-common-dir", "--git-path", "objects", "--show-object-format")
	if err != nil {
		return found{}, err
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 5 || lines[0] == "" {
		return found{}, fmt.Errorf("git rev-parse: unexpected output %q", out)
	}
	return found{top: lines[0], gitDir: lines[1], common: lines[2], objects: lines[3], format: lines[4]}, nil
}

// openPrivate makes r use a private repository under the data
// directory, workspace.git, made the first time: its objects, and its
// refs for --changes branch (written by update-ref, which runs nothing).
func (r *Repo) openPrivate(ctx context.Context) error {
	r.private = true
	objects, err := r.makeObjects("workspace.git")
	if err != nil {
		return err
	}
	bare := filepath.Join(r.dataRel, "workspace.git")
	for name, data := range map[string]string{"HEAD": "ref: refs/heads/main\n", "config": "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"} {
		if _, err := readBeneath(r.dataBase, filepath.Join(bare, name), 1<<20); errors.Is(err, os.ErrNotExist) {
			if err := writeBeneath(r.dataBase, filepath.Join(bare, name), []byte(data), 0o644); err != nil {
				return fmt.Errorf("create workspace.git: %w", err)
			}
		}
	}
	if d, err := openBeneath(r.dataBase, filepath.Join(bare, "refs", "heads"), true); err == nil {
		d.close()
	}
	r.refs = git{tool: r.tool, gitDir: filepath.Join(r.dataDir, "workspace.git")}
	if r.home, err = openHome(r.opts.GitHome, objects, nil, "sha1", nil, r.tool, r.root); err != nil {
		return err
	}
	r.g = r.home.git()
	r.g.workTree, r.g.dir = r.root, r.root
	return nil
}

// makeObjects makes the object directory of the repository name (a
// directory of the data directory) unless it exists, following no
// symlink, and returns its path.
func (r *Repo) makeObjects(name string) (string, error) {
	for _, d := range []string{"objects/info", "objects/pack"} {
		dir, err := openBeneath(r.dataBase, filepath.Join(r.dataRel, name, d), true)
		if err != nil {
			return "", fmt.Errorf("create %s: %w", name, err)
		}
		dir.close()
	}
	return filepath.Join(r.dataDir, name, "objects"), nil
}

// Root is the workspace root.
func (r *Repo) Root() string { return r.root }

// DataDir is the directory holding worktrees.
func (r *Repo) DataDir() string { return r.dataDir }

// IsGit reports whether the workspace is a git checkout (false: its
// snapshots live in a private repository).
func (r *Repo) IsGit() bool { return !r.private }

// lock takes the per-repository lock named name: the process's mutex and
// an exclusive flock on a file in the repository's home, so processes
// sharing the repository take turns too. The returned function
// releases both.
func (r *Repo) lock(name string) (func(), error) {
	r.mu.Lock()
	unlock, err := flock(filepath.Join(r.home.dir, "troupe-"+name+".lock"))
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
// be, never through a symlink), waiting for any other holder, and
// returns its release.
func flock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
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

// tempIndex returns the path of a new index file in the home and a
// function that removes it.
func (r *Repo) tempIndex() (string, func(), error) {
	f, err := os.CreateTemp(r.home.tmpDir(), r.home.tmpName("index"))
	if err != nil {
		return "", nil, fmt.Errorf("create temp index: %w", err)
	}
	name := f.Name()
	f.Close()
	os.Remove(name) // git wants to create it (an empty file is not an index)
	return name, func() { os.Remove(name); os.Remove(name + ".lock") }, nil
}
