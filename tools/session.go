package tools

import (
	"sync"
	"sync/atomic"
	"time"
)

// Config holds the framework's settings. The zero value is usable: every
// unset field falls back to its default.
type Config struct {
	// Timeout bounds one tool call (default 60 s). shell has its own
	// timeout argument and is bounded by that instead.
	Timeout time.Duration
	// Truncation overrides the per-tool defaults.
	Truncation map[string]Truncation
	// DataDir is the workspace's folder of agent-visible files (spill
	// files, fetched artifacts); default <workspace>/.troupe.
	DataDir string
	// StateDir is the run's state directory, out of the agents' reach:
	// the spill index lives there ("": spill files are never swept).
	StateDir string
	// SpillMaxAge is how long spill files are kept (default 7 days).
	SpillMaxAge time.Duration
	// CacheMaxAge is how many rounds a cached result lives (default 10).
	CacheMaxAge int
	// Tiers decides which tool definitions an agent is sent each round
	// and which it loads with search_tools.
	Tiers Tiers
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
	// Artifacts, when set, also keeps spilled outputs where other
	// processes of the run read them (artifact:// handles).
	Artifacts ArtifactStore
	// Redact, when set, replaces configured secret values in every
	// result's text before anything else sees it: the cache, the spill
	// file, the conversation (and so model requests and checkpoints).
	// Redact is a function (e.g. a redact.Redactor's String) so that
	// programs of other modules can set it.
	Redact func(string) string

	round   atomic.Int64
	shellMu sync.Mutex // Sequential tools run one at a time per session
	state   sessionState
}

// NewSession returns a session over ws with a fresh read tracker, todo
// list and cache, and a spill store under cfg.DataDir.
func NewSession(agent string, ws *Workspace, cfg Config) *Session {
	return &Session{
		Agent:     agent,
		Workspace: ws,
		Reads:     NewReadTracker(),
		Todos:     &TodoList{},
		Cache:     NewCache(cfg.CacheMaxAge),
		Spill:     NewSpiller(ws, cfg.DataDir, cfg.StateDir, cfg.SpillMaxAge),
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
