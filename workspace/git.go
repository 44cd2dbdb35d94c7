package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Every git command troupe runs goes through git.command: the agent
// writes the work tree, and may write a repository's config, hooks,
// attributes and a worktree's .git file, so none of that may decide what
// git runs. A command:
//   - names its repository explicitly (GIT_DIR, and GIT_WORK_TREE when
//     it has a work tree): no discovery through a .git file;
//   - runs against a git directory troupe owns (home.go) with the
//     repository's objects borrowed (GIT_OBJECT_DIRECTORY), so the
//     repository's own config is never read where files, attributes or
//     diffs are handled; only refs of the user's repository are read or
//     written against its own git directory (refsGit), by plumbing that
//     runs no program whatever its config says;
//   - gets an environment of PATH (absolute entries outside the
//     workspace), HOME, LANG, LC_*, TZ and the GIT_ variables set here:
//     none of the process's secrets, and no GIT_ variable of the caller;
//   - has hooks, the filesystem monitor, pagers, transports (so no
//     lazy fetch, ssh or credential helper) and the system and global
//     config switched off by the flags below. The user's global config
//     is /dev/null (globalConfig); of it troupe takes only the global
//     ignore file's patterns (excludes.go), read once by a git config
//     --get that runs nothing, and core.autocrlf, core.eol and the names
//     of its filter drivers (merge_convert.go).

// gitConfig are the -c flags every git command gets: no hooks, no
// filesystem monitor, no pager, no transport of any kind, no automatic
// gc, no signing, paths printed raw.
var gitConfig = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.autocrlf=false",
	"-c", "core.quotePath=false",
	"-c", "core.pager=cat",
	"-c", "protocol.allow=never",
	"-c", "gc.auto=0",
	"-c", "commit.gpgSign=false",
	"-c", "tag.gpgSign=false",
	"-c", "advice.detachedHead=false",
}

// globalConfig is the user's global config as troupe's git reads it:
// none. Bringing back what a snapshot needs of it (ignores, filters run
// confined) starts here.
const globalConfig = "/dev/null"

// fixedIdentity makes snapshot and branch commits reproducible and
// independent of the user's configuration.
var fixedIdentity = []string{
	"GIT_AUTHOR_NAME=troupe", "GIT_AUTHOR_EMAIL=troupe@localhost", "GIT_AUTHOR_DATE=@0 +0000",
	"GIT_COMMITTER_NAME=troupe", "GIT_COMMITTER_EMAIL=troupe@localhost", "GIT_COMMITTER_DATE=@0 +0000",
}

// errNoGitDir is a git command built without a git directory: troupe
// never lets git discover one.
var errNoGitDir = errors.New("git command without GIT_DIR")

// git runs git commands in one place: a git directory, and when set a
// work tree, an index file and object directories of its own.
type git struct {
	tool     *gitTool // the git binary and PATH; nil: found now
	dir      string   // the directory the command runs in ("": gitDir)
	gitDir   string   // GIT_DIR, always set
	workTree string   // GIT_WORK_TREE, when set
	index    string   // GIT_INDEX_FILE, when set
	objects  string   // GIT_OBJECT_DIRECTORY, when set
	borrow   []string // GIT_ALTERNATE_OBJECT_DIRECTORIES
	conf     []string // more -c flags
	// identity replaces fixedIdentity (GIT_AUTHOR_*, GIT_COMMITTER_*)
	// when set: a branch's commits (branch.go).
	identity []string
	// userGlobal lets git read the user's global config (and the
	// variables that place it): only to read the global ignore file's
	// name (excludes.go).
	userGlobal bool
	// discover lets git find the repository from dir: only Open and
	// the functions that name a checkout for the user (discover).
	discover bool
	// enter is the argv prefix that starts the command where its work
	// tree is: inside an overlay worktree's namespace (overlay_worktree.go).
	enter []string
}

// gitTool is the git binary troupe runs and the PATH it runs with: the
// absolute entries of the process's PATH that are not beneath the
// workspace (an agent could put a program called git there).
type gitTool struct {
	bin  string
	path string
}

// findGit finds git on the process's PATH, skipping relative entries
// and any beneath one of the directories in untrusted.
func findGit(untrusted ...string) *gitTool {
	var keep []string
	bin := ""
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if d == "" || !filepath.IsAbs(d) || beneathAny(d, untrusted) {
			continue
		}
		keep = append(keep, d)
		if bin == "" {
			p := filepath.Join(d, "git")
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				bin = p
			}
		}
	}
	return &gitTool{bin: bin, path: strings.Join(keep, string(filepath.ListSeparator))}
}

// beneathAny reports whether path is one of dirs or beneath one, as
// written or with symlinks resolved.
func beneathAny(path string, dirs []string) bool {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		real = path
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		for _, p := range []string{path, real} {
			if rel, err := filepath.Rel(d, p); err == nil && filepath.IsLocal(rel) {
				return true
			}
		}
	}
	return false
}

// keptEnv reports whether the process's variable kv passes to git:
// HOME, LANG, LC_* and TZ (PATH is the tool's).
func keptEnv(kv string) bool {
	name, _, _ := strings.Cut(kv, "=")
	return name == "HOME" || name == "LANG" || name == "TZ" || strings.HasPrefix(name, "LC_")
}

// env is the environment of a git command (see the top of this file).
func (g git) env(tool *gitTool) []string {
	env := []string{"PATH=" + tool.path}
	for _, kv := range os.Environ() {
		if keptEnv(kv) {
			env = append(env, kv)
		}
	}
	if g.userGlobal {
		for _, name := range []string{"XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL"} {
			if v, ok := os.LookupEnv(name); ok {
				env = append(env, name+"="+v)
			}
		}
	} else {
		env = append(env, "GIT_CONFIG_GLOBAL="+globalConfig)
	}
	env = append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0", "GIT_NO_REPLACE_OBJECTS=1", "GIT_NO_LAZY_FETCH=1")
	if g.identity != nil {
		env = append(env, g.identity...)
	} else {
		env = append(env, fixedIdentity...)
	}
	if g.gitDir != "" {
		env = append(env, "GIT_DIR="+g.gitDir)
	}
	if g.workTree != "" {
		env = append(env, "GIT_WORK_TREE="+g.workTree)
	}
	if g.index != "" {
		env = append(env, "GIT_INDEX_FILE="+g.index)
	}
	if g.objects != "" {
		env = append(env, "GIT_OBJECT_DIRECTORY="+g.objects)
	}
	if len(g.borrow) > 0 {
		env = append(env, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+strings.Join(g.borrow, string(filepath.ListSeparator)))
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

// runFrom runs git with args reading stdin (streamed: a spooled
// patch), its output dropped; an error carries the start of its stderr.
func (g git) runFrom(ctx context.Context, stdin io.Reader, args ...string) error {
	cmd, err := g.command(ctx, args...)
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stdin, cmd.Stderr = stdin, &limitedWriter{w: &stderr, n: 4 << 10}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
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
	cmd, err := g.command(ctx, args...)
	if err != nil {
		return nil, "", -1, err
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
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
// g's directory, with g's environment. A command without a git
// directory is refused.
func (g git) command(ctx context.Context, args ...string) (*exec.Cmd, error) {
	if g.gitDir == "" && !g.discover {
		return nil, errNoGitDir
	}
	tool := g.tool
	if tool == nil {
		tool = findGit()
	}
	if tool.bin == "" {
		return nil, ErrNoGit
	}
	argv := append(append(append([]string{tool.bin}, gitConfig...), g.conf...), args...)
	if len(g.enter) > 0 {
		argv = append(append([]string(nil), g.enter...), argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = g.dir
	if cmd.Dir == "" {
		cmd.Dir = g.gitDir
	}
	cmd.Env = g.env(tool)
	return cmd, nil
}

// line runs git and returns its output's first line.
func (g git) line(ctx context.Context, args ...string) (string, error) {
	out, err := g.run(ctx, nil, args...)
	s, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(s), err
}
