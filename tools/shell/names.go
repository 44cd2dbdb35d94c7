// Package shell holds the shell tool and its companions job_output and
// job_kill: one-shot commands, named sessions (a persistent bash) and
// background jobs, each run under the command guard (tools/shell/guard)
// and the process guard (tools/procguard), with an environment stripped
// of secrets (ChildEnv). A session's shells and jobs are its own
// tools.Session state and end with it.
package shell

// Names of the shell tools.
const (
	NameShell     = "shell"
	NameJobOutput = "job_output"
	NameJobKill   = "job_kill"
)
