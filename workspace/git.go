package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// gitConfig are the -c flags every git command gets: no hooks, no
// filesystem monitor, no automatic gc, no signing, paths printed raw.
var gitConfig = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.autocrlf=false",
	"-c", "core.quotePath=false",
	"-c", "gc.auto=0",
	"-c", "commit.gpgSign=false",
	"-c", "advice.detachedHead=false",
}

// fixedIdentity makes snapshot and branch commits reproducible and
// independent of the user's configuration.
var fixedIdentity = []string{
	"GIT_AUTHOR_NAME=troupe", "GIT_AUTHOR_EMAIL=troupe@localhost", "GIT_AUTHOR_DATE=@0 +0000",
	"GIT_COMMITTER_NAME=troupe", "GIT_COMMITTER_EMAIL=troupe@localhost", "GIT_COMMITTER_DATE=@0 +0000",
}

// git runs git commands in one place: a working directory and, when set,
// a git directory, a work tree and an index file of its own.
type git struct {
	dir      string   // the directory the command runs in
	gitDir   string   // GIT_DIR, when set
	workTree string   // GIT_WORK_TREE, when set
	index    string   // GIT_INDEX_FILE, when set
	conf     []string // more -c flags
}

// env is the environment of a git command: the process's, without any
// GIT_ variable that could redirect it, plus ours.
func (g git) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	env = append(env, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
	env = append(env, fixedIdentity...)
	if g.gitDir != "" {
		env = append(env, "GIT_DIR="+g.gitDir)
	}
	if g.workTree != "" {
		env = append(env, "GIT_WORK_TREE="+g.workTree)
	}
	if g.index != "" {
		env = append(env, "GIT_INDEX_FILE="+g.index)
	}
	return env
}

// withIndex returns g using index file idx.
func (g git) withIndex(idx string) git { g.index = idx; return g }

// run runs git with args, stdin as its input, and returns its output.
func (g git) run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	out, stderr, code, err := g.exec(ctx, stdin, args...)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d: %s", code, stderr)
	}
	if err != nil {
		return out, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

// runCode runs git and returns its output and exit code; err is set only
// when git could not run or ended with a code of 128 or more.
func (g git) runCode(ctx context.Context, stdin []byte, args ...string) ([]byte, int, error) {
	out, _, code, err := g.exec(ctx, stdin, args...)
	return out, code, err
}

// exec runs git and returns its output, its stderr, its exit code and an
// error when it could not run or ended with a code of 128 or more.
func (g git) exec(ctx context.Context, stdin []byte, args ...string) ([]byte, string, int, error) {
	cmd := g.command(ctx, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.Bytes(), "", 0, nil
	case errors.Is(err, exec.ErrNotFound):
		return nil, "", -1, ErrNoGit
	case errors.As(err, &exit) && exit.ExitCode() > 0 && exit.ExitCode() < 128:
		return stdout.Bytes(), strings.TrimSpace(stderr.String()), exit.ExitCode(), nil
	case errors.As(err, &exit):
		return stdout.Bytes(), "", exit.ExitCode(), fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	default:
		return nil, "", -1, err
	}
}

// command is the git command with args, not started: our -c flags, in
// g's directory, with g's environment.
func (g git) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append(append(append([]string(nil), gitConfig...), g.conf...), args...)...)
	cmd.Dir = g.dir
	cmd.Env = g.env()
	return cmd
}

// line runs git and returns its output's first line.
func (g git) line(ctx context.Context, args ...string) (string, error) {
	out, err := g.run(ctx, nil, args...)
	s, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(s), err
}
