// Package builtin is the one place that knows every built-in tool: it
// lists them (Builtin, All), maps them to the built-in agent kinds
// (ForKind) and sets up a tools.Session for all of them (Config, Prepare,
// NewSession). The framework (package tools) and the tool packages
// (tools/applypatch, tools/shell, tools/web, tools/agent) know none of this.
package builtin

import (
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/agent"
	"github.com/troupe-ai/troupe/tools/applypatch"
	"github.com/troupe-ai/troupe/tools/procguard"
	"github.com/troupe-ai/troupe/tools/sandbox"
	"github.com/troupe-ai/troupe/tools/shell"
	"github.com/troupe-ai/troupe/tools/web"
)

// Builtin returns every built-in tool, built explicitly in one place.
func Builtin() []tools.Tool {
	return []tools.Tool{
		// Each tool adds its constructor here.
		tools.ReadFile(),
		tools.EditFile(),
		tools.WriteFile(),
		tools.ListDir(),
		tools.Think(),
		tools.Todo(),
		tools.Grep(),
		tools.FindFiles(),
		applypatch.ApplyPatch(),
		shell.Shell(),
		shell.JobOutput(),
		shell.JobKill(),
		agent.AskUser(),
		web.WebFetch(),
		web.WebSearch(),
	}
}

// DelegationTools returns the tools of agents that may delegate.
func DelegationTools() []tools.Tool {
	return []tools.Tool{agent.Delegate(), agent.CheckAgent(), agent.SendInput(), agent.CancelAgent()}
}

// All returns every tool an agent can be given: the built-in tools,
// submit_plan and the delegation tools (which work only in agents that may
// delegate).
func All() []tools.Tool {
	return append(append(Builtin(), agent.SubmitPlan()), DelegationTools()...)
}

// Config is the configuration of the framework and of every built-in tool.
type Config struct {
	tools.Config
	// Shell configures the shell tools (blocklist, extra environment).
	Shell shell.Config
	// Web configures web_fetch and web_search.
	Web web.Config
	// Sandbox is the OS sandbox of the commands the tools start; each
	// agent's session gets a box from it. Nil: commands are not confined
	// (sandbox.mode: off, and the library's default).
	Sandbox *sandbox.Settings
}

// Shared is what the sessions of a run share beyond the framework's
// cache and spill store; a nil field gives each session its own (a page
// cache) or lets it make one (a process guard, closed with the session).
type Shared struct {
	// Web holds fetched pages and extracts for Config.Web.CacheTTL.
	Web *web.Cache
	// Procs keeps the processes the shell tools start from outliving
	// their command, agent or process.
	Procs *procguard.Guard
	// Sandbox is this session's own box (from Config.Sandbox), owned and
	// closed by the session.
	Sandbox *sandbox.Box
}

// Prepare gives session s the built-in tools' configuration and the
// run's shared parts.
func Prepare(s *tools.Session, cfg Config, sh Shared) {
	shell.Configure(s, cfg.Shell)
	web.Configure(s, cfg.Web)
	if sh.Web == nil {
		sh.Web = web.NewCache(cfg.Web.CacheTTL)
	}
	web.UseCache(s, sh.Web)
	if sh.Procs != nil {
		shell.UseProcs(s, sh.Procs)
	}
	shell.UseSandbox(s, sh.Sandbox)
}

// NewSession returns a session over ws for every built-in tool
// (tools.NewSession, then Prepare with nothing shared).
func NewSession(agentID string, ws *tools.Workspace, cfg Config) *tools.Session {
	s := tools.NewSession(agentID, ws, cfg.Config)
	Prepare(s, cfg, Shared{})
	return s
}
