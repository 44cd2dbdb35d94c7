package shell

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/troupe-ai/troupe/tools/procguard"
)

// killGrace is how long a process group gets between SIGTERM and SIGKILL.
const killGrace = 2 * time.Second

// shellRun is one command to run.
type shellRun struct {
	command   string
	dir       string
	timeout   time.Duration
	outputCap int
	envExtras []string // variables passed beyond the allow-list (config)
	// starter starts the command (the agent's sandbox); nil: plainly.
	starter func(*exec.Cmd) error
}

// shellOutcome is what became of it.
type shellOutcome struct {
	exitCode  int
	output    string
	total     int64 // bytes the command wrote, including any dropped
	timedOut  bool
	cancelled bool
	duration  time.Duration
	// sandboxNote names the sandbox rule the failure suggests, or "".
	sandboxNote string
}

// shellArgs are the arguments that make sh run command: -c for most,
// a script file for a command too long to be one argument (Linux caps an
// argument at 128 KiB). cleanup removes the file.
func shellArgs(command string) (args []string, cleanup func(), err error) {
	if len(command) <= shellArgMax {
		return []string{"-c", command}, func() {}, nil
	}
	f, err := os.CreateTemp("", "troupe-command-*.sh")
	if err != nil {
		return nil, nil, fmt.Errorf("write the long command to a file: %w", err)
	}
	_, werr := f.WriteString(command)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(f.Name())
		return nil, nil, fmt.Errorf("write the long command to a file: %w", werr)
	}
	return []string{f.Name()}, func() { _ = os.Remove(f.Name()) }, nil
}

// shellArgMax is the longest command passed as an argument; longer ones
// go through a file (0600, removed afterwards).
const shellArgMax = 64 << 10

// exec runs the command in a process scope of its own (process group,
// cgroup where available) with stdout and stderr on one pipe (so their
// interleaving is kept) and stdin on /dev/null. On timeout or
// cancellation the scope gets SIGTERM, then SIGKILL after a grace period.
// When the command ends, whatever it left running (background jobs, a
// setsid daemon when cgroups are available) is stopped the same way, so
// nothing outlives the call. The error is non-nil only when the command
// could not start.
func (r shellRun) exec(ctx context.Context, g *procguard.Guard) (shellOutcome, error) {
	sh, err := procguard.FindShell()
	if err != nil {
		return shellOutcome{}, err
	}
	args, cleanup, err := shellArgs(r.command)
	if err != nil {
		return shellOutcome{}, err
	}
	defer cleanup()
	pr, pw, err := os.Pipe()
	if err != nil {
		return shellOutcome{}, fmt.Errorf("create output pipe: %w", err)
	}
	start := time.Now()
	cmd, scope, err := g.Start(func() *exec.Cmd {
		c := exec.Command(sh, args...)
		c.Args[0] = filepath.Base(sh) // messages say "bash: ...", not the install path
		c.Dir = r.dir
		c.Env = childEnv(os.Environ(), r.envExtras)
		c.Stdout, c.Stderr = pw, pw // stdin stays nil: /dev/null
		return c
	}, r.starter)
	_ = pw.Close() // the child holds its own copy
	if err != nil {
		_ = pr.Close()
		return shellOutcome{}, err
	}
	defer scope.Release()

	buf := newCapBuffer(r.outputCap)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		chunk := make([]byte, 32*1024)
		for {
			n, err := pr.Read(chunk)
			buf.Write(chunk[:n])
			if err != nil {
				return
			}
		}
	}()
	waitDone := make(chan struct{})
	go func() {
		_ = cmd.Wait() // the status is read from cmd.ProcessState
		close(waitDone)
	}()

	var out shellOutcome
	timer := time.NewTimer(r.timeout)
	defer timer.Stop()
	select {
	case <-waitDone:
	case <-timer.C:
		out.timedOut = true
	case <-ctx.Done():
		out.cancelled = true
	}
	if out.timedOut || out.cancelled {
		scope.Signal(syscall.SIGTERM)
		procguard.WaitClosed(waitDone, killGrace)
		scope.Kill()
		<-waitDone
	}
	out.duration = time.Since(start)
	out.exitCode = exitCode(cmd.ProcessState)

	// Stop what the command left behind; the pipe reaches EOF once every
	// process holding it has exited.
	scope.Signal(syscall.SIGTERM)
	procguard.WaitClosed(readDone, killGrace)
	scope.Kill()
	if !procguard.WaitClosed(readDone, killGrace) {
		// A process that left the group (setsid) still holds the pipe,
		// and no cgroup caught it.
		_ = pr.Close()
		<-readDone
	} else {
		_ = pr.Close()
	}
	out.output, out.total = buf.String(), buf.total
	return out, nil
}

// exitCode is the exit status, or 128+signal for a process killed by a
// signal, as shells report it.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// capBuffer keeps a command's output within a byte cap: the first 60 % of
// the cap and the last 40 %, since build and test output puts its verdict
// at the end. The executor's head-and-tail truncation then cuts the kept
// text down to what the model sees.
type capBuffer struct {
	head    []byte
	headCap int
	tail    []byte // the latest bytes; trimmed to tailCap when read
	tailCap int
	total   int64
}

func newCapBuffer(limit int) *capBuffer {
	h := limit * 6 / 10
	return &capBuffer{headCap: h, tailCap: limit - h}
}

// Write appends p; it never fails.
func (b *capBuffer) Write(p []byte) {
	b.total += int64(len(p))
	if room := b.headCap - len(b.head); room > 0 {
		n := min(room, len(p))
		b.head = append(b.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	b.tail = append(b.tail, p...)
	if len(b.tail) > 2*b.tailCap {
		// Amortized: copy down only when the slack reaches tailCap.
		b.tail = append(b.tail[:0], b.tail[len(b.tail)-b.tailCap:]...)
	}
}

// String returns the kept output, with a marker where bytes were dropped.
func (b *capBuffer) String() string {
	tail := b.tail
	if len(tail) > b.tailCap {
		tail = tail[len(tail)-b.tailCap:]
	}
	dropped := b.total - int64(len(b.head)) - int64(len(tail))
	if dropped == 0 {
		return string(b.head) + string(tail)
	}
	return fmt.Sprintf("%s\n[... %d bytes of output dropped: the command wrote %d bytes, more than the %d bytes kept ...]\n%s",
		b.head, dropped, b.total, b.headCap+b.tailCap, tail)
}
