package tools

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"strings"
	"time"
)

//go:embed shell.md
var shellDoc string

// ShellParams are shell's arguments.
type ShellParams struct {
	Command    string `json:"command" jsonschema:"the command line, run with bash -c"`
	Timeout    int    `json:"timeout,omitempty" jsonschema:"seconds before the command and everything it started are killed; default 120, max 600"`
	WorkingDir string `json:"working_dir,omitempty" jsonschema:"directory to run in, relative to the workspace root; default the root"`
}

// DefaultShellTimeout is the shell timeout when the call gives none.
const DefaultShellTimeout = 120 * time.Second

// shellOutputCap bounds how much output one call buffers; the executor's
// truncation then cuts it to what the model sees.
const shellOutputCap = 10 << 20

// Shell returns the shell tool: it runs a command with bash (or sh) in the
// workspace and reports its exit status and combined output.
func Shell() Tool {
	return New(Spec{
		Name: NameShell, Kinds: changeKinds,
		Description: shellDoc,
		ReadOnly:    false,
		Parallel:    Sequential,
		Tier:        TierAlways,
		Truncation:  HeadAndTail(30*1024, 0.4),
	}, runShell, Minimum("timeout", 1), Maximum("timeout", 600))
}

func runShell(ctx context.Context, s *Session, p ShellParams) (Result, error) {
	if strings.TrimSpace(p.Command) == "" {
		return Errorf("shell: command is empty; give the command line to run"), nil
	}
	guard, err := newShellGuard(s.Config)
	if err != nil {
		return Errorf("shell: %v; nothing was run (fix the configuration)", err), nil
	}
	if r := guard.check(p.Command); r != nil {
		return refused(r), nil
	}
	dir, err := s.Workspace.Resolve(p.WorkingDir)
	if err != nil {
		return Errorf("shell: working_dir: %v", err), nil
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return Errorf("shell: working_dir %s is not an existing directory", s.Workspace.Display(dir)), nil
	}
	timeout := DefaultShellTimeout
	if p.Timeout > 0 {
		timeout = time.Duration(p.Timeout) * time.Second
	}
	run := shellRun{command: p.Command, dir: dir, timeout: timeout, outputCap: shellOutputCap, envExtras: s.Config.ShellEnv}
	out, err := run.exec(ctx)
	if err != nil {
		return Errorf("shell: the command could not be started: %v", err), nil
	}
	return out.result(timeout), nil
}

// result formats an outcome for the model: "[exit: N]" first, then the
// output, then what ended it early.
func (o shellOutcome) result(timeout time.Duration) Result {
	var b strings.Builder
	fmt.Fprintf(&b, "[exit: %d]\n", o.exitCode)
	b.WriteString(o.output)
	note := func(s string) {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(s + "\n")
	}
	switch {
	case o.timedOut:
		note(fmt.Sprintf("[timed out after %d s]", int(timeout/time.Second)))
	case o.cancelled:
		note("[cancelled]")
	}
	r := Text(b.String())
	r.IsError = o.timedOut || o.cancelled
	return r.WithMeta("exit_code", o.exitCode).
		WithMeta("timed_out", o.timedOut).
		WithMeta("cancelled", o.cancelled).
		WithMeta("output_bytes", o.total).
		WithMeta("duration_ms", o.duration.Milliseconds())
}

// refused is the result for a command the guard refused.
func refused(r *refusal) Result {
	where := ""
	if r.Command != "" {
		where = fmt.Sprintf(" in `%s`", r.Command)
	}
	return Errorf("shell: command refused by the blocklist (rule %s)%s: %s. Nothing was run. The blocklist is a safety net against destructive accidents; do not retry this command or a variant of it", r.Rule, where, r.Why).
		WithMeta("blocked_by", r.Rule)
}
