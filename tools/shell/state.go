package shell

import (
	"sync"

	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/procguard"
)

// Config configures the shell tools. The zero value is usable.
type Config struct {
	// Blocklist holds regular expressions that refuse shell commands on
	// top of the built-in rules (which are always on). Each is matched
	// against the raw command, every nested script and every simple
	// command as the parser normalised it.
	Blocklist []string
	// Env names environment variables (or prefixes ending in "*") that
	// commands get beyond the built-in allow-list; names that look secret
	// (KEY, TOKEN, PASSWORD, AUTH, cloud credentials...) never do.
	Env []string
}

// The keys of the shell's values in a tools.Session.
type (
	stateKey  struct{} // *shellState, the session's own
	configKey struct{} // Config, attached
	procsKey  struct{} // *procguard.Guard, attached
)

// Configure gives the shell tools of session s their configuration.
func Configure(s *tools.Session, cfg Config) { s.Attach(configKey{}, cfg) }

// configOf is the session's shell configuration (the zero Config when
// none was given).
func configOf(s *tools.Session) Config {
	c, _ := s.Attached(configKey{}).(Config)
	return c
}

// UseProcs makes the commands of session s run under g, which keeps them
// from outliving their command, agent or process; the agents of a run
// share one, and whoever made it closes it. Without one the session makes
// its own on first use and closes it with the session.
func UseProcs(s *tools.Session, g *procguard.Guard) { s.Attach(procsKey{}, g) }

// shellState is a session's shell sessions and background jobs.
type shellState struct {
	mu       sync.Mutex
	sessions map[string]*shellSession
	jobs     jobTable
	ownProcs *procguard.Guard // made by procsOf when none was attached
	closed   bool
}

// shellsOf is the session's shell state; once the session is closed, one
// that was never made comes back closed, refusing sessions and jobs.
func shellsOf(s *tools.Session) *shellState {
	st, err := tools.State(s, stateKey{}, func() *shellState { return &shellState{} })
	if err != nil {
		return &shellState{closed: true}
	}
	return st
}

// procsOf is the session's process guard.
func procsOf(s *tools.Session) *procguard.Guard {
	if g, ok := s.Attached(procsKey{}).(*procguard.Guard); ok && g != nil {
		return g
	}
	st := shellsOf(s)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ownProcs == nil {
		st.ownProcs = procguard.New()
	}
	return st.ownProcs
}

// Close ends what the agent's shell tools left running: its shell
// sessions and background jobs (each process group and cgroup killed),
// and the process guard when the session made its own. tools.Session's
// Close calls it; shell calls made afterwards are refused.
func (st *shellState) Close() error {
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
	if own != nil {
		return own.Close()
	}
	return nil
}

// JobsNote is a short note of the agent's background jobs for its next
// model request: each running job, or one with output or an end not yet
// read, with its command and how much new output it has. "" when there
// are none.
func JobsNote(s *tools.Session) string {
	st, ok := s.Attached(stateKey{}).(*shellState)
	if !ok {
		return ""
	}
	return st.jobs.note()
}
