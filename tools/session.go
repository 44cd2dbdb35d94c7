package tools

import (
	"os/exec"
	"sync"

	"github.com/troupe-ai/troupe/tools/sandbox"

	"sync/atomic"
	"time"
)

// Config holds the framework's settings. The zero value is usable: every
// unset field falls back to its default.
type Config struct {
	// Timeout bounds one tool call (default 60 s). shell has its own
	// timeout argument and is bounded by that instead.
	Timeout time.Duration
	// ShellBlocklist holds regular expressions that refuse shell
	// commands on top of the built-in rules (which are always on). Each is
	// matched against the raw command, every nested script and every
	// simple command as the parser normalised it.
	ShellBlocklist []string
	// ShellEnv names environment variables (or prefixes ending in "*")
	// that commands get beyond the built-in allow-list; names that look
	// secret (KEY, TOKEN, PASSWORD, AUTH, cloud credentials...) never do.
	ShellEnv []string
	// Truncation overrides the per-tool defaults.
	Truncation map[string]Truncation
	// DataDir is where the run keeps its data (spill files); default
	// <workspace>/.troupe/runs/<run>.
	DataDir string
	// SpillMaxAge is how long spill files are kept (default 7 days).
	SpillMaxAge time.Duration
	// CacheMaxAge is how many rounds a cached result lives (default 10).
	CacheMaxAge int
	// Web configures web_fetch and web_search.
	Web WebConfig
	// Tiers decides which tool definitions an agent is sent each round
	// and which it loads with search_tools.
	Tiers Tiers
	// Sandbox is the OS sandbox of the commands the tools start; each
	// agent's session gets a box from it (Session.Sandbox). Nil: commands
	// are not confined (sandbox.mode: off, and the library's default).
	Sandbox *sandbox.Settings
}

// DefaultTimeout is the per-call timeout when Config.Timeout is zero.
const DefaultTimeout = 60 * time.Second

func (c Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c Config) truncation(tool string, spec Truncation) Truncation {
	if t, ok := c.Truncation[tool]; ok {
		return t
	}
	if spec.Strategy != NoTruncation {
		return spec
	}
	return DefaultTruncation(tool)
}

// Session is one agent's tool session: its workspace, read tracker, todo
// list and round counter, plus the run-wide cache and spill store it
// shares with the other agents of the run.
type Session struct {
	Agent     string
	Workspace *Workspace
	Reads     *ReadTracker
	Todos     *TodoList
	Cache     *Cache
	Spill     *Spiller
	Config    Config
	// Delegator spawns and manages child agents for the delegation tools;
	// nil for agents that may not delegate.
	Delegator Delegator
	// Asker puts questions to the user for ask_user; nil when nobody can
	// answer (a headless run).
	Asker Asker
	// Artifacts, when set, also keeps spilled outputs where other
	// processes of the run read them (artifact:// handles).
	Artifacts ArtifactStore
	// Extractor runs web_fetch's prompt over a page on a cheap model; nil
	// where no model is at hand (tools call), and web_fetch then returns
	// the page itself.
	Extractor Extractor
	// Web holds fetched pages and extracts for Config.Web.CacheTTL; the
	// agents of a run share one. Nil fetches every time.
	Web *WebCache
	// Redact, when set, replaces configured secret values in every
	// result's text before anything else sees it: the cache, the spill
	// file, the conversation (and so model requests and checkpoints).
	// Redact is a function (e.g. a redact.Redactor's String) so that
	// programs of other modules can set it.
	Redact func(string) string

	// Sandbox confines the processes the shell tool starts (nil: not
	// confined); Close closes it, removing its private TMPDIR.
	Sandbox *sandbox.Box

	// Procs keeps the processes the shell tool starts from outliving their
	// command, agent or process; the agents of a run share one. Nil: the
	// session makes one of its own on first use, and Close closes it.
	Procs *ProcGuard

	round   atomic.Int64
	shellMu sync.Mutex // Sequential tools run one at a time per session
	shells  shellState
}

// shellState is a session's shell sessions and background jobs.
type shellState struct {
	mu       sync.Mutex
	sessions map[string]*shellSession
	jobs     jobTable
	ownProcs *ProcGuard // made by procs() when Procs is nil
	closed   bool
}

// starter starts the session's commands: in its sandbox, or nil (no
// sandbox: ProcGuard starts them plainly).
func (s *Session) starter() func(*exec.Cmd) error {
	if s.Sandbox == nil {
		return nil
	}
	return s.Sandbox.Start
}

// procs is the session's process guard.
func (s *Session) procs() *ProcGuard {
	if s.Procs != nil {
		return s.Procs
	}
	s.shells.mu.Lock()
	defer s.shells.mu.Unlock()
	if s.shells.ownProcs == nil {
		s.shells.ownProcs = NewProcGuard()
	}
	return s.shells.ownProcs
}

// Close ends what the agent's tools left running: its shell sessions and
// background jobs (each process group and cgroup killed), and the process
// guard when the session made its own. Call it once the agent has ended;
// shell calls made afterwards are refused. It is safe to call more than
// once and concurrently with a running call.
func (s *Session) Close() error {
	st := &s.shells
	st.mu.Lock()
	st.closed = true
	sessions := st.sessions
	st.sessions = nil
	own := st.ownProcs
	st.mu.Unlock()
	var wg sync.WaitGroup
	for _, sh := range sessions {
		wg.Go(sh.close)
	}
	wg.Go(st.jobs.closeAll)
	wg.Wait()
	if s.Sandbox != nil {
		_ = s.Sandbox.Close()
	}
	if own != nil {
		return own.Close()
	}
	return nil
}

// JobsNote is a short note of the agent's background jobs for its next
// model request: each running job, or one with output or an end not yet
// read, with its command and how much new output it has. "" when there
// are none.
func (s *Session) JobsNote() string { return s.shells.jobs.note() }

// NewSession returns a session over ws with a fresh read tracker, todo
// list and cache, and a spill store under cfg.DataDir.
func NewSession(agent string, ws *Workspace, cfg Config) *Session {
	return &Session{
		Agent:     agent,
		Workspace: ws,
		Reads:     NewReadTracker(),
		Todos:     &TodoList{},
		Cache:     NewCache(cfg.CacheMaxAge),
		Spill:     NewSpiller(ws, cfg.DataDir, cfg.SpillMaxAge),
		Web:       NewWebCache(cfg.Web.CacheTTL),
		Config:    cfg,
	}
}

// Round is the agent's current round (0 before the first).
func (s *Session) Round() int { return int(s.round.Load()) }

// SetRound advances the agent's round; the shared cache ages entries by it.
func (s *Session) SetRound(n int) {
	s.round.Store(int64(n))
	if s.Cache != nil {
		s.Cache.setRound(s.Agent, n)
	}
}
