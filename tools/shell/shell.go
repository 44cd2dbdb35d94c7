package shell

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/shell/guard"
)

//go:embed shell.md
var shellDoc string

// ShellParams are shell's arguments.
type ShellParams struct {
	Command    string `json:"command" jsonschema:"the command line, run with bash"`
	Timeout    int    `json:"timeout,omitempty" jsonschema:"seconds before the command and everything it started are killed; default 120, max 600; for a background job, how long it may run (default: until you finish)"`
	WorkingDir string `json:"working_dir,omitempty" jsonschema:"directory to run in, relative to the workspace root; default the root (in a session: the session's current directory, and the session stays there)"`
	Session    string `json:"session,omitempty" jsonschema:"a name of your choice: commands with the same session run in one persistent bash, so the working directory, exported variables and an activated virtualenv carry over"`
	Background bool   `json:"background,omitempty" jsonschema:"start the command as a background job (a dev server, a watcher) and return its job ID at once; read its output with job_output, stop it with job_kill"`
}

// DefaultShellTimeout is the shell timeout when the call gives none.
const DefaultShellTimeout = 120 * time.Second

// shellOutputCap bounds how much output one call buffers; the executor's
// truncation then cuts it to what the model sees.
const shellOutputCap = 10 << 20

// shellCommandMax is the longest command accepted: longer ones are
// scripts, better written to a file and run.
const shellCommandMax = 1 << 20

// Shell returns the shell tool: it runs a command with bash (or sh) in the
// workspace and reports its exit status and combined output; in a named
// session (a persistent bash) or as a background job.
func Shell() tools.Tool {
	return tools.New(tools.Spec{
		Guidance: []tools.GuidanceLine{{Section: tools.SectionWhichTool, Order: 50, Text: shellGuidance},
			tools.Line(tools.SectionWhichTool, 51, "For several commands that build on each other (cd, exported variables, an activated virtualenv), give shell the same session name: the shell persists between calls.")},
		Name:        NameShell,
		Description: shellDoc,
		ReadOnly:    false,
		Parallel:    tools.Sequential,
		Tier:        tools.TierAlways,
		Truncation:  tools.HeadAndTail(30*1024, 0.4),
	}, runShell, tools.Minimum("timeout", 1), tools.Maximum("timeout", 600))
}

func runShell(ctx context.Context, s *tools.Session, p ShellParams) (tools.Result, error) {
	if strings.TrimSpace(p.Command) == "" {
		return tools.Errorf("shell: command is empty; give the command line to run"), nil
	}
	if len(p.Command) > shellCommandMax {
		return tools.Errorf("shell: the command is %d bytes, more than the %d a command may have; write the script to a file (write_file) and run that file", len(p.Command), shellCommandMax), nil
	}
	if strings.ContainsRune(p.Command, 0) {
		return tools.Errorf("shell: the command holds a NUL byte, which no shell can run"), nil
	}
	if p.Background && p.Session != "" {
		return tools.Errorf("shell: background and session do not go together: a background job runs on its own, in working_dir (default the workspace root); put any setup (cd, source) in its command"), nil
	}
	if p.Session != "" && !validSessionName(p.Session) {
		return tools.Errorf("shell: session %q is not a valid name: use 1 to 64 letters, digits, '.', '_' or '-'", p.Session), nil
	}
	g, err := guard.New(configOf(s).Blocklist)
	if err != nil {
		return tools.Errorf("shell: %v; nothing was run (fix the configuration)", err), nil
	}
	if r := g.Check(p.Command); r != nil {
		return refused(r), nil
	}
	dir := ""
	if p.WorkingDir != "" || p.Session == "" {
		if dir, err = s.Workspace.Resolve(p.WorkingDir); err != nil {
			return tools.Errorf("shell: working_dir: %v", err), nil
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return tools.Errorf("shell: working_dir %s is not an existing directory", s.Workspace.Display(dir)), nil
		}
	}
	switch {
	case p.Background:
		return startJob(s, p, dir), nil
	case p.Session != "":
		return runInSession(ctx, s, p, dir)
	}
	timeout := DefaultShellTimeout
	if p.Timeout > 0 {
		timeout = time.Duration(p.Timeout) * time.Second
	}
	run := shellRun{command: p.Command, dir: dir, timeout: timeout, outputCap: shellOutputCap, envExtras: configOf(s).Env}
	out, err := run.exec(ctx, procsOf(s))
	if err != nil {
		return tools.Errorf("shell: the command could not be started: %v", err), nil
	}
	return out.result(timeout), nil
}

// result formats an outcome for the model: "[exit: N]" first, then the
// output, then what ended it early.
func (o shellOutcome) result(timeout time.Duration) tools.Result {
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
	r := tools.Text(b.String())
	r.IsError = o.timedOut || o.cancelled
	return r.WithMeta("exit_code", o.exitCode).
		WithMeta("timed_out", o.timedOut).
		WithMeta("cancelled", o.cancelled).
		WithMeta("output_bytes", o.total).
		WithMeta("duration_ms", o.duration.Milliseconds())
}

// refused is the result for a command the guard refused.
func refused(r *guard.Refusal) tools.Result {
	where := ""
	if r.Command != "" {
		where = fmt.Sprintf(" in `%s`", r.Command)
	}
	return tools.Errorf("shell: command refused by the blocklist (rule %s)%s: %s. Nothing was run. The blocklist is a safety net against destructive accidents; do not retry this command or a variant of it", r.Rule, where, r.Why).
		WithMeta("blocked_by", r.Rule)
}

// shellGuidance routes file work away from shell, naming the file tools the
// agent has.
func shellGuidance(has func(...string) bool) string {
	var own []string
	for _, n := range []string{tools.NameReadFile, tools.NameGrep, tools.NameFindFiles, tools.NameListDir, tools.NameEditFile} {
		if has(n) {
			own = append(own, n)
		}
	}
	line := "Use shell to build, test and run programs"
	if len(own) > 0 {
		line += fmt.Sprintf(", not to read, search or edit files: %s do that with less output", strings.Join(own, ", "))
	}
	return line + "."
}
