package shell

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/procguard"
)

// A shell session is one persistent bash process per (agent, name): the
// working directory, variables, functions and an activated virtualenv
// carry over from one command to the next. Commands are sent one at a
// time on the shell's standard input as
//
//	. FILE </dev/null >&3 2>&3 3>&-
//
// (the command sits in a private file, so its length and quoting do not
// matter, it reads nothing, and an `exec >log` in it cannot take the
// session's output away), framed by markers carrying a random nonce on
// descriptor 3: a start marker, then an end marker with the exit status
// and `pwd -P`. Output before the start marker (from processes of an
// earlier command) is dropped.

// maxShellSessions caps an agent's sessions.
const maxShellSessions = 8

// shellSession is one persistent shell.
type shellSession struct {
	name string
	ws   *tools.Workspace
	mu   sync.Mutex // one command at a time

	cmd       *exec.Cmd
	scope     *procguard.Scope
	stdin     io.WriteCloser
	dir       string // private directory of command files
	exited    chan struct{}
	reader    chan struct{} // closed when the output pipe reached EOF
	closeOnce sync.Once

	outMu sync.Mutex
	cur   *sessionRun // the command running, nil between commands
	carry []byte      // unparsed output
}

// sessionRun is one command in a session.
type sessionRun struct {
	nonce   string
	started bool
	buf     *capBuffer
	done    chan struct{}
	status  int
	cwd     string
	trailer bool
}

// startShellSession starts a session's shell in the workspace root.
func startShellSession(name string, ws *tools.Workspace, g *procguard.Guard, starter func(*exec.Cmd) error, envExtras []string) (*shellSession, error) {
	sh, err := exec.LookPath("bash")
	if err != nil {
		return nil, errors.New("shell sessions need bash, which is not installed")
	}
	dir, err := os.MkdirTemp("", "troupe-session-")
	if err != nil {
		return nil, fmt.Errorf("create the session's directory: %w", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("create output pipe: %w", err)
	}
	var stdin io.WriteCloser
	var pipeErr error
	cmd, scope, err := g.Start(func() *exec.Cmd {
		c := exec.Command(sh, "--noprofile", "--norc")
		c.Args[0] = "bash"
		c.Dir = ws.Root()
		c.Env = childEnv(os.Environ(), envExtras)
		c.Stdout, c.Stderr = pw, pw
		c.ExtraFiles = []*os.File{pw} // descriptor 3
		stdin, pipeErr = c.StdinPipe()
		return c
	}, starter)
	_ = pw.Close()
	if err == nil && pipeErr != nil {
		err = pipeErr
	}
	if err != nil {
		_ = pr.Close()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s := &shellSession{name: name, ws: ws, cmd: cmd, scope: scope, stdin: stdin, dir: dir,
		exited: make(chan struct{}), reader: make(chan struct{})}
	go s.read(pr)
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// read parses the session's output for as long as the shell lives.
func (s *shellSession) read(pr *os.File) {
	defer close(s.reader)
	defer pr.Close()
	chunk := make([]byte, 32*1024)
	for {
		n, err := pr.Read(chunk)
		if n > 0 {
			s.feed(chunk[:n])
		}
		if err != nil {
			return
		}
	}
}

// Markers framing a command's output; the nonce follows each.
const (
	markStart = "\x00TROUPE-S-"
	markEnd   = "\x00TROUPE-E-"
)

// feed takes output from the pipe and hands it to the running command.
func (s *shellSession) feed(p []byte) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	data := append(s.carry, p...)
	s.carry = nil
	for len(data) > 0 {
		r := s.cur
		switch {
		case r == nil:
			return // between commands: a stray write of an old process
		case r.trailer:
			// "<status>\x00<cwd>\n\x00"
			i := bytes.IndexByte(data, 0)
			j := -1
			if i >= 0 {
				j = bytes.IndexByte(data[i+1:], 0)
			}
			if j < 0 {
				if len(data) < 64<<10 {
					s.carry = data
				}
				return
			}
			r.status, _ = strconv.Atoi(string(data[:i]))
			r.cwd = strings.TrimSuffix(string(data[i+1:i+1+j]), "\n")
			data = data[i+j+2:]
			s.cur = nil
			close(r.done)
		case !r.started:
			m := markStart + r.nonce + "\x00"
			i := bytes.Index(data, []byte(m))
			if i < 0 {
				s.carry = keepTail(data, len(m)-1)
				return
			}
			data = data[i+len(m):]
			r.started = true
		default:
			m := markEnd + r.nonce + " "
			i := bytes.Index(data, []byte(m))
			if i < 0 {
				keep := len(m) - 1
				if len(data) > keep {
					r.buf.Write(data[:len(data)-keep])
					data = data[len(data)-keep:]
				}
				s.carry = append([]byte(nil), data...)
				return
			}
			r.buf.Write(data[:i])
			data = data[i+len(m):]
			r.trailer = true
		}
	}
}

// keepTail returns a copy of data's last n bytes (a marker's possible
// beginning).
func keepTail(data []byte, n int) []byte {
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return append([]byte(nil), data...)
}

// sessionOutcome is a session command's outcome.
type sessionOutcome struct {
	shellOutcome
	cwd    string   // the session's directory afterwards, workspace-relative
	notes  []string // what happened to the session
	closed bool     // the shell is gone; the next command starts a fresh one
}

// run runs one command in the session. dir, when not empty, is where it
// starts (and where the session stays).
func (s *shellSession) run(ctx context.Context, command, dir string, timeout time.Duration, outputCap int) (sessionOutcome, error) {
	var out sessionOutcome
	nonce := randomHex(12)
	file := filepath.Join(s.dir, "command-"+nonce)
	if err := os.WriteFile(file, []byte(command), 0o600); err != nil {
		return out, fmt.Errorf("write the command file: %w", err)
	}
	defer os.Remove(file)
	r := &sessionRun{nonce: nonce, buf: newCapBuffer(outputCap), done: make(chan struct{})}
	s.outMu.Lock()
	s.cur = r
	s.carry = nil
	s.outMu.Unlock()
	line := fmt.Sprintf("builtin printf '\\0TROUPE-S-%s\\0' >&3; ", nonce)
	if dir != "" {
		line += "builtin cd -- " + shellQuoteWord(s.ws.CommandPath(dir)) + " && "
	}
	line += fmt.Sprintf(". %s </dev/null >&3 2>&3 3>&-; __troupe_status=$?; builtin printf '\\0TROUPE-E-%s %%d\\0' \"$__troupe_status\" >&3; builtin pwd -P >&3 2>/dev/null; builtin printf '\\0' >&3\n",
		shellQuoteWord(file), nonce)
	start := time.Now()
	if _, err := io.WriteString(s.stdin, line); err != nil {
		out.closed = true
		out.notes = append(out.notes, "the session's shell had exited; run the command again to start a fresh one")
		return out, nil
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-r.done:
	case <-s.exited:
		s.close() // what the shell left behind goes too
		out.closed = true
		out.exitCode = exitCode(s.cmd.ProcessState)
		out.notes = append(out.notes, fmt.Sprintf("the session's shell exited (exit, or a failure under set -e); session %q is closed and its next command starts a fresh shell in the workspace root", s.name))
	case <-timer.C:
		out.timedOut = true
	case <-ctx.Done():
		out.cancelled = true
	}
	out.duration = time.Since(start)
	if out.timedOut || out.cancelled {
		s.close()
		out.closed = true
		out.exitCode = exitCode(s.cmd.ProcessState)
		out.notes = append(out.notes, fmt.Sprintf("session %q was stopped with everything it ran (its working directory and variables are lost); its next command starts a fresh shell in the workspace root", s.name))
	}
	s.outMu.Lock()
	if s.cur == r && r.started && !r.trailer {
		// Ended without its end marker: what was held back as a possible
		// marker's beginning is output.
		r.buf.Write(s.carry)
	}
	s.cur, s.carry = nil, nil
	out.output, out.total = r.buf.String(), r.buf.total
	s.outMu.Unlock()
	if out.closed {
		return out, nil
	}
	out.exitCode = r.status
	s.stopLeftovers()
	out.cwd = s.checkCwd(r.cwd, &out.notes)
	return out, nil
}

// checkCwd returns the session's directory relative to the workspace,
// moving the shell back to the root when the command left the workspace
// (or its directory was removed).
func (s *shellSession) checkCwd(cwd string, notes *[]string) string {
	rel, err := filepath.Rel(s.ws.CommandRoot(), cwd)
	inside := err == nil && cwd != "" && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
	if inside {
		return filepath.ToSlash(rel)
	}
	_, _ = io.WriteString(s.stdin, "builtin cd -- "+shellQuoteWord(s.ws.CommandRoot())+"\n")
	what := "no longer exists"
	if cwd != "" {
		what = fmt.Sprintf("(%s) is outside the workspace", cwd)
	}
	*notes = append(*notes, fmt.Sprintf("the session's working directory %s; it was reset to the workspace root", what))
	return "."
}

// stopLeftovers stops what the command left running in the session
// (background jobs started with &): SIGTERM, then SIGKILL.
func (s *shellSession) stopLeftovers() {
	self := s.cmd.Process.Pid
	left := s.leftovers(self)
	if len(left) == 0 {
		return
	}
	for _, pid := range left {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(killGrace)
	for len(s.leftovers(self)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // processes give no other sign of exiting
	}
	for _, pid := range s.leftovers(self) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// leftovers are the session's processes other than its shell: the
// cgroup's members, or the shell's descendants without a cgroup.
func (s *shellSession) leftovers(self int) []int {
	var pids []int
	if s.scope.InCgroup() {
		pids = s.scope.Members()
	} else {
		pids = descendants(self)
	}
	out := pids[:0]
	for _, p := range pids {
		if p != self && !zombie(p) {
			out = append(out, p)
		}
	}
	return out
}

// close stops the shell and everything it started, and removes its
// files.
func (s *shellSession) close() { s.closeOnce.Do(s.doClose) }

func (s *shellSession) doClose() {
	select {
	case <-s.exited:
	default:
		_ = s.stdin.Close()
		s.scope.Signal(syscall.SIGTERM)
		if !procguard.WaitClosed(s.exited, killGrace) {
			s.scope.Kill()
			<-s.exited
		}
	}
	s.scope.Kill()
	procguard.WaitClosed(s.reader, killGrace)
	s.scope.Release()
	_ = os.RemoveAll(s.dir)
}

// descendants lists the processes descending from pid, from /proc.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := parentOf(p); ok {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// procStat returns the fields of /proc/<pid>/stat after the command name.
func procStat(pid int) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(string(b[i+1:])), true
}

func parentOf(pid int) (int, bool) {
	f, ok := procStat(pid)
	if !ok || len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	f, ok := procStat(pid)
	return !ok || (len(f) > 0 && (f[0] == "Z" || f[0] == "X"))
}

// shellQuoteWord quotes s as one word for bash.
func shellQuoteWord(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
