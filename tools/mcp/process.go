package mcp

import (
	"errors"
	"github.com/troupe-ai/troupe/tools/procguard"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/troupe-ai/troupe/internal/procsec"
	"github.com/troupe-ai/troupe/tools/shell"
)

// stopGrace is how long a server gets to exit after its stdin closes, and
// then after SIGTERM, before the next step.
const stopGrace = 2 * time.Second

// stderrDrain bounds the wait for the rest of an ended server's stderr
// (a process it started may hold the pipe open).
const stderrDrain = 500 * time.Millisecond

// process is a stdio server's process: it leads a process group of its
// own, so stopping it stops whatever it started.
type process struct {
	cmd    *exec.Cmd
	pgid   int
	stderr *tail
	exited chan struct{} // closed once Wait returned; state is then set
	// stderrDone is closed when the stderr pipe reached its end.
	stderrDone chan struct{}
	state      *os.ProcessState
	killed     sync.Once
	ours       atomic.Bool // we stopped it (a timeout, a broken connection, Close)
}

// startProcess starts cfg's command with its stdin and stdout as the
// transport's pipes. The environment is the tools' allow-list (never our
// secrets) plus the server's configured env and TROUPE_TREE; the tree
// the instance serves (cfg.Dir) replaces ${TROUPE_TREE} in its arguments
// and env.
func startProcess(cfg Config) (p *process, stdout io.ReadCloser, stdin io.WriteCloser, err error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, nil, nil, errors.New("no command")
	}
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	pipe := func() (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, nil, nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, nil, nil, err
	}
	argv, env := withTree(cfg.Command, cfg.Env, cfg.Dir)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cfg.Dir
	cmd.Env = serverEnv(os.Environ(), env)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := starter(cfg)(cmd); err != nil {
		closeAll()
		return nil, nil, nil, err
	}
	// The child holds its own copies of its ends.
	_, _, _ = inR.Close(), outW.Close(), errW.Close()
	p = &process{cmd: cmd, pgid: cmd.Process.Pid, stderr: &tail{max: 4096}, exited: make(chan struct{}),
		stderrDone: make(chan struct{})}
	go func() {
		_, _ = io.Copy(p.stderr, errR)
		_ = errR.Close()
		close(p.stderrDone)
	}()
	go func() {
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.exited)
	}()
	return p, outR, inW, nil
}

// starter starts a server's command: confined by its sandbox, and for an
// instance in an overlay worktree through the prefix that enters the
// tree's namespaces at its root (as the agent's shell commands start).
func starter(cfg Config) func(*exec.Cmd) error {
	if cfg.enter == nil {
		if cfg.Sandbox != nil {
			return cfg.Sandbox.Start
		}
		return procsec.Start
	}
	return func(c *exec.Cmd) error {
		pre := cfg.enter()
		if cfg.Sandbox != nil {
			return cfg.Sandbox.StartEntered(c, pre)
		}
		if c.Err != nil {
			return c.Start()
		}
		c.Args = append(append(slices.Clone(pre), c.Path), c.Args[min(1, len(c.Args)):]...)
		c.Path, c.Dir = pre[0], ""
		return procsec.Start(c)
	}
}

// serverEnv is a server's environment: the allow-listed part of ours and
// the server's own configured variables, which win.
func serverEnv(ours []string, own map[string]string) []string {
	env := shell.ChildEnv(ours, nil)
	env = slicesDeleteNames(env, own)
	for k, v := range own {
		env = append(env, k+"="+v)
	}
	return env
}

func slicesDeleteNames(env []string, names map[string]string) []string {
	out := env[:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, set := names[name]; !set {
			out = append(out, kv)
		}
	}
	return out
}

// kill stops the whole group at once and waits for the server to exit.
func (p *process) kill() {
	select {
	case <-p.exited: // it ended on its own; what it started may still run
	default:
		p.ours.Store(true)
	}
	p.killed.Do(func() { _ = syscall.Kill(-p.pgid, syscall.SIGKILL) })
	<-p.exited
}

// stop lets the server exit on its own (its stdin is closed), then
// signals the group with SIGTERM and finally SIGKILL.
func (p *process) stop() {
	select {
	case <-p.exited:
	default:
		p.ours.Store(true)
	}
	if procguard.WaitClosed(p.exited, stopGrace) {
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL) // what it started goes too
		return
	}
	_ = syscall.Kill(-p.pgid, syscall.SIGTERM)
	if !procguard.WaitClosed(p.exited, stopGrace) {
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		<-p.exited
	}
	_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
}

// exit describes how the process ended (waiting up to d for it to), with
// the end of what it wrote on stderr; "" while it still runs.
func (p *process) exit(d time.Duration) string {
	if !procguard.WaitClosed(p.exited, d) {
		return ""
	}
	desc := p.state.String() // "exit status 2", "signal: killed"
	// What it wrote last may still be in the pipe: read to its end, unless
	// something it started keeps the pipe open.
	procguard.WaitClosed(p.stderrDone, stderrDrain)
	if t := p.stderr.String(); t != "" {
		desc += "; the end of its stderr: " + oneLine(t, 600)
	}
	return desc
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return strings.TrimSpace(string(b))
}
