package workspace

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
)

// An agent in a worktree is the workspace of the agents it starts, so
// its worktree is opened as a workspace (Open) while the agent may have
// rewritten its .git file. The worktrees this process has handed to
// agents are listed here (the process's own record of what it made,
// hence package state): Open takes a listed one's git directory from
// it, never from the .git file.
var live = struct {
	sync.Mutex
	m map[string]*Worktree // root (as given, and with symlinks resolved) → worktree
}{m: map[string]*Worktree{}}

// goLive lists w as handed to an agent.
func (w *Worktree) goLive() {
	live.Lock()
	defer live.Unlock()
	for _, k := range w.liveKeys() {
		live.m[k] = w
	}
}

// leaveLive takes w off the list.
func (w *Worktree) leaveLive() {
	live.Lock()
	defer live.Unlock()
	for _, k := range w.liveKeys() {
		if live.m[k] == w {
			delete(live.m, k)
		}
	}
}

// liveKeys are the paths w's root is listed under.
func (w *Worktree) liveKeys() []string {
	if w.dir == "" {
		return nil
	}
	keys := []string{w.Root()}
	if real, err := filepath.EvalSymlinks(w.Root()); err == nil && real != w.Root() {
		keys = append(keys, real)
	}
	return keys
}

// liveWorktree is the worktree handed to an agent whose root is root, or nil.
func liveWorktree(root string) *Worktree {
	live.Lock()
	defer live.Unlock()
	return live.m[filepath.Clean(root)]
}

// openWorkspace opens the worktree as the workspace at root (its Root):
// its git directory, objects and home are the ones troupe made.
func (w *Worktree) openWorkspace(ctx context.Context, root string, opts Options) (*Repo, error) {
	r, err := blankRepo(root, w.dir, opts, w.repo.root)
	if err != nil {
		return nil, err
	}
	r.at, r.prefix, r.gitDir, r.home, r.tool = w.at, w.snap.Prefix, w.admin, w.repo.home, w.repo.tool
	r.refs = git{tool: r.tool, gitDir: w.admin}
	r.userIgnore = w.repo.userIgnore
	r.g = r.home.git()
	r.g.dir, r.g.workTree = w.at, w.at
	if w.at != w.dir {
		r.g.workTree = "."
	}
	if w.ov != nil {
		r.g.enter = w.g.enter
	}
	if err := r.writeExcludes(); err != nil {
		return nil, err
	}
	return r, nil
}

// procFD reports whether this system names open descriptors as
// /proc/self/fd/N (Linux with /proc mounted).
var procFD = sync.OnceValue(func() bool {
	if runtime.GOOS != "linux" {
		return false
	}
	fi, err := os.Stat("/proc/self/fd")
	return err == nil && fi.IsDir()
})

// anchorPath is how troupe reaches the directory d opened at path:
// /proc/self/fd/N where the system has it, so a path resolved through
// it always lands in d, even after d is renamed or its path swapped for
// a symlink; else path. A git command given it as its directory starts
// in d (the child changes into it before exec, while the descriptor is
// still open in it).
func anchorPath(d *dirFD, path string) string {
	if !procFD() {
		return path
	}
	return "/proc/self/fd/" + strconv.Itoa(d.fd())
}
