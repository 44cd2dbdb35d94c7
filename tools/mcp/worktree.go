package mcp

import (
	"path/filepath"
	"sync"

	"github.com/troupe-ai/troupe/tools"
)

// A server started in the run's workspace (Config.Dir) would act there
// for every agent: a worker in a worktree of its own that called a
// filesystem server's write would change the user's files, bypassing
// capture and landing, and read files its tree does not have. So a call
// from an agent whose tools work in another tree (its session's
// workspace is not Dir) goes to an instance of the server of its own:
// started in that tree on the agent's first call to one of the server's
// tools, sandboxed to it (Config.SandboxIn), entered like the agent's
// commands for an overlay worktree, and stopped when the agent's session
// closes, which is before its worktree is captured, so what it wrote is
// in. The run's instance stays for agents in the workspace and for
// listing tools. An HTTP server, or one configured Shared, keeps one
// instance. Instances count against the run's Limit.

// instanceKey keys a worktree instance of srv in an agent's session.
type instanceKey struct{ srv *Server }

// worktrees are a server's worktree instances, closed with it.
type worktrees struct {
	mu     sync.Mutex
	live   map[*Server]bool
	closed bool // the server closed: no more are made
}

// instanceFor is the server that acts for the agent of sess: s itself for
// an agent in s's directory, an HTTP or shared server, or a call with no
// workspace; else the agent's own instance in its tree, made on its first
// call and closed with its session.
func (s *Server) instanceFor(sess *tools.Session) (*Server, error) {
	if s.parent != nil || s.cfg.URL != "" || s.cfg.Shared || s.cfg.Dir == "" || sess == nil || sess.Workspace == nil {
		return s, nil
	}
	ws := sess.Workspace
	if ws.Root() == s.cfg.Dir || ws.Root() == s.home {
		return s, nil
	}
	return tools.State(sess, instanceKey{s}, func() *Server { return s.spawn(ws) })
}

// spawn makes s's instance for the tree of ws, not started.
func (s *Server) spawn(ws *tools.Workspace) *Server {
	cfg := s.cfg
	cfg.Dir, cfg.Sandbox, cfg.enter = ws.CommandRoot(), nil, nil
	if s.cfg.SandboxIn != nil {
		cfg.Sandbox = s.cfg.SandboxIn(ws.CommandRoot(), ws.Root())
	}
	if ws.Enter(ws.Root()) != nil {
		cfg.enter = func() []string { return ws.Enter(ws.Root()) }
	}
	inst := newServer(cfg, s.log.With().Str("worktree", ws.CommandRoot()).Logger(), s.client)
	inst.parent, inst.limit = s, s.limit
	s.trees.mu.Lock()
	if s.trees.closed { // the run has ended: the instance refuses every call
		s.trees.mu.Unlock()
		inst.closed = true
		inst.closeOnce.Do(func() { close(inst.done) })
		if cfg.Sandbox != nil {
			_ = cfg.Sandbox.Close()
		}
		return inst
	}
	if s.trees.live == nil {
		s.trees.live = map[*Server]bool{}
	}
	s.trees.live[inst] = true
	s.trees.mu.Unlock()
	return inst
}

// forget drops a closed instance from its server's.
func (s *Server) forget(inst *Server) {
	s.trees.mu.Lock()
	delete(s.trees.live, inst)
	s.trees.mu.Unlock()
}

// closeWorktrees closes every worktree instance of s still open (their
// sessions' closing would have, had every agent ended).
func (s *Server) closeWorktrees() {
	s.trees.mu.Lock()
	s.trees.closed = true
	var all []*Server
	for inst := range s.trees.live {
		all = append(all, inst)
	}
	s.trees.mu.Unlock()
	var wg sync.WaitGroup
	for _, inst := range all {
		wg.Go(func() { _ = inst.Close() })
	}
	wg.Wait()
}

// Worktrees is how many worktree instances of s are open (started or
// not): each agent in a worktree that called one of s's tools and has
// not ended.
func (s *Server) Worktrees() int {
	s.trees.mu.Lock()
	defer s.trees.mu.Unlock()
	return len(s.trees.live)
}

// evictIdle stops the instance if it runs and is in no call, freeing its
// slot; false when it is busy, locked or not running.
func (s *Server) evictIdle() bool {
	if !s.mu.TryLock() {
		return false
	}
	defer s.mu.Unlock()
	if s.live == nil || s.busy.Load() > 0 {
		return false
	}
	s.evictions++
	s.log.Debug().Msg("idle MCP server instance stopped to make room for another agent's")
	s.stopLocked()
	return true
}

// homeOf is dir with its symlinks resolved (tools.Workspace's root is), or
// dir when it cannot be.
func homeOf(dir string) string {
	if dir == "" {
		return ""
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return dir
}
