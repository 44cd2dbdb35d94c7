package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"github.com/troupe-ai/troupe/internal/statedir"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// A clean or smudge filter of the user's global config (the user's own,
// trusted; never one the repository's config, which an agent may write,
// defines) is a program, and the data it reads is the agent's: troupe
// runs it only in the OS sandbox (tools/sandbox), required whole: no
// network, writes only beneath a private temporary directory (its
// TMPDIR), no reads of the credential stores or troupe's state, and an
// environment of PATH, HOME, LANG, LC_*, TZ and TMPDIR. It runs as git
// runs it (sh -c, %f the path, in the work tree's top), in git's order:
// cleaning, the filter first and then git's conversion of line endings;
// smudging, line endings first and then the filter (merge_convert.go).
// A driver with a long-running "process" command runs it, confined the
// same way (filter_process.go). On a machine where the sandbox cannot
// be enforced, a filtered file is refused with a reason: the changes
// are kept as a patch.

// filterDriver is a filter driver of the user's global config.
type filterDriver struct {
	name          string // its name (lfs: git lfs's, filter_gitdir.go)
	clean, smudge string
	process       string // a long-running filter (filter_process.go): wins over clean and smudge
	required      bool
}

// filterPolicy is the sandbox a filter runs in, writable the trees it
// may write (its private directory first); with why when this machine
// cannot enforce it.
func filterPolicy(writable []string) (sandbox.Policy, string) {
	home, _ := os.UserHomeDir()
	deny := sandbox.DefaultDenyRead(home)
	if root, err := statedir.Root(os.Getenv, home); err == nil {
		deny = append(deny, root)
	}
	p := sandbox.Policy{Writable: writable, DenyRead: deny, Network: sandbox.NetworkDeny, Required: true}
	if miss := filterSupport().Missing(p); len(miss) > 0 {
		return p, strings.Join(miss, "; ")
	}
	return p, ""
}

// filterSupport is what this kernel offers the sandbox, probed once.
var filterSupport = sync.OnceValue(sandbox.Check)

// filterUnsupported is why the filters cannot run confined here ("" when
// they can).
func filterUnsupported() string {
	_, why := filterPolicy([]string{"/nonexistent-probe"})
	return why
}

// runFilter runs the filter command cmdline (a clean or smudge
// command of the user's global config) on what src writes for path, in
// the sandbox, its output to dst, at most the Repo's limit, streamed. A
// failed filter is an error when the driver is required; otherwise
// errAsIs (git uses the contents as they are).
func (c *converter) runFilter(ctx context.Context, d filterDriver, cmdline, path string, src patchWriter, dst io.Writer) error {
	if cmdline == "" {
		return errAsIs
	}
	run, err := c.confineFilter(d, path)
	if err != nil {
		return err
	}
	defer run.done()
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(fctx, "/bin/sh", "-c", strings.ReplaceAll(cmdline, "%f", shellQuote(path)))
	cmd.Dir, cmd.Env = run.dir, run.env
	limit := c.r.maxChange()
	out := &capWriter{w: dst, n: limit}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &limitedWriter{w: &stderr, n: 4 << 10}
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	fed := make(chan error, 1)
	if err = sandbox.Start(cmd, run.policy, filterSupport()); err == nil {
		feed := &feedWriter{w: in}
		go func() { // fed while its output is read
			err := src(feed)
			if cerr := in.Close(); err == nil && !feed.broke {
				err = cerr
			}
			fed <- err
		}()
		err = cmd.Wait()
		if ferr := <-fed; err == nil && ferr != nil && !feed.broke {
			err = ferr // a filter that stopped reading (git's EPIPE) is as git takes it: fine
		}
	} else {
		in.Close()
	}
	if out.over { // its exit follows from the output no longer read
		err = fmt.Errorf("its output is over %d bytes", limit)
	}
	switch {
	case err == nil:
		return nil
	case d.required || ctx.Err() != nil:
		return fmt.Errorf("the filter of %s (run in the sandbox) failed: %w: %s", path, err, strings.TrimSpace(stderr.String()))
	}
	return errAsIs
}

// filterEnv is a filter's environment: PATH, HOME, LANG, LC_*, TZ of
// ours (as git's, git.go), where the user's global config is
// (GIT_CONFIG_GLOBAL, XDG_CONFIG_HOME, as troupe read its drivers), no
// system config, TMPDIR its private directory and GIT_DIR the git
// directory made for it (filter_gitdir.go).
func filterEnv(tmp, gitDir string) []string {
	env := []string{"PATH=" + findGit().path, "TMPDIR=" + tmp, "GIT_DIR=" + gitDir,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_NO_LAZY_FETCH=1"}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if keptEnv(kv) || name == "GIT_CONFIG_GLOBAL" || name == "XDG_CONFIG_HOME" {
			env = append(env, kv)
		}
	}
	return env
}

// feedWriter writes to a filter's input and notes when a write failed
// because the filter no longer reads it.
type feedWriter struct {
	w     io.Writer
	broke bool
}

func (f *feedWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) {
		f.broke = true
	}
	return n, err
}

// shellQuote quotes s for sh, as git quotes %f.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// capWriter keeps at most n bytes and notes that more came.
type capWriter struct {
	w    io.Writer
	n    int64
	over bool
}

func (c *capWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > c.n {
		c.over = true
		return 0, errors.New("filter output over the limit")
	}
	c.n -= int64(len(p))
	return c.w.Write(p)
}

// checkFiltered refuses each filtered path whose snapshot version is not
// in git's clean form: a snapshot takes a file the user had changed
// (since git last added it) as its bytes on disk, without the filter's
// clean, so for such a file the base, ours and theirs would not be of
// one form. A file the snapshot took as the user's HEAD has it is; one
// the snapshot did not hold (new) is the agent's.
func (c *converter) checkFiltered(ctx context.Context, snap Snapshot, entries []entry) error {
	if c == nil {
		return nil
	}
	for _, e := range entries {
		if _, ok := c.filtered[e.path]; !ok || e.oldMode == "" {
			continue
		}
		same := false
		if snap.Base != "" {
			head, code, err := c.r.g.runCode(ctx, nil, "rev-parse", "-q", "--verify", snap.Base+":"+e.path) // e.path is the repository's (Prefix included)
			if err != nil {
				return err
			}
			same = code == 0 && strings.TrimSpace(string(head)) == e.oldBlob
		}
		if !same {
			delete(c.filtered, e.path)
			c.refused[e.path] = e.path + " goes through a filter of your git config and was changed in the workspace when the snapshot was taken: the snapshot holds it as it was on disk, not as git adds it, so it cannot be merged; its changes are kept as a patch"
		}
	}
	return nil
}
