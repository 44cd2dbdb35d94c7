package shell

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/troupe-ai/troupe/internal/text"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/procguard"
)

// A background job is a command started by shell with background: true.
// It runs in a process scope of its own (process group, cgroup where
// available) until it exits, job_kill stops it, its timeout expires, or
// its agent ends. Its output is kept in memory: what was not read yet
// (head and tail, within jobUnreadCap) and the last jobTailCap bytes.

const (
	maxRunningJobs = 8       // an agent's jobs running at once
	maxKeptJobs    = 32      // jobs remembered, running or not
	jobUnreadCap   = 4 << 20 // unread output kept per job
	jobTailCap     = 64 << 10
)

// job is one background command.
type job struct {
	id      string
	command string
	dir     string // workspace-relative
	pid     int
	started time.Time

	cmd      *exec.Cmd
	scope    *procguard.Scope
	done     chan struct{} // closed when it has exited and its output is in
	stopOnce sync.Once

	mu       sync.Mutex
	unread   *capBuffer
	tail     []byte
	total    int64
	changed  chan struct{} // closed and replaced on new output or exit
	exited   bool
	reaping  bool // the shell has exited; its scope is being cleaned up
	exitCode int
	killed   string // why it was stopped: "job_kill", "timeout", "agent ended"
	reported bool   // job_output has shown its end
}

// jobTable is an agent's jobs.
type jobTable struct {
	mu     sync.Mutex
	seq    int
	jobs   []*job
	closed bool
}

// start starts command in dir as a new job.
func (t *jobTable) start(g *procguard.Guard, starter func(*exec.Cmd) error, ws *tools.Workspace, command, dir string, timeout time.Duration, envExtras []string) (*job, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, procguard.ErrClosed
	}
	running := 0
	for _, j := range t.jobs {
		if !j.hasExited() {
			running++
		}
	}
	if running >= maxRunningJobs {
		return nil, fmt.Errorf("%d jobs are already running (%s); stop one with job_kill first", running, t.summaryLocked())
	}
	sh, err := procguard.FindShell()
	if err != nil {
		return nil, err
	}
	args, cleanup, err := shellArgs(command)
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("create output pipe: %w", err)
	}
	cmd, scope, err := g.Start(func() *exec.Cmd {
		c := exec.Command(sh, args...)
		c.Args[0] = filepath.Base(sh)
		c.Dir = dir
		c.Env = childEnv(os.Environ(), envExtras)
		c.Stdout, c.Stderr = pw, pw
		return c
	}, starter)
	_ = pw.Close()
	if err != nil {
		_ = pr.Close()
		cleanup()
		return nil, err
	}
	t.seq++
	j := &job{id: fmt.Sprintf("j%d", t.seq), command: command, dir: ws.Display(dir), pid: cmd.Process.Pid,
		started: time.Now(), cmd: cmd, scope: scope, done: make(chan struct{}),
		unread: newCapBuffer(jobUnreadCap), changed: make(chan struct{})}
	t.jobs = append(t.jobs, j)
	t.pruneLocked()
	readDone := make(chan struct{})
	go j.read(pr, readDone)
	go j.wait(readDone, timeout, cleanup)
	return j, nil
}

// read copies the job's output into its buffers.
func (j *job) read(pr *os.File, readDone chan struct{}) {
	defer close(readDone)
	defer pr.Close()
	chunk := make([]byte, 32*1024)
	for {
		n, err := pr.Read(chunk)
		if n > 0 {
			j.mu.Lock()
			j.unread.Write(chunk[:n])
			j.total += int64(n)
			j.tail = append(j.tail, chunk[:n]...)
			if len(j.tail) > 2*jobTailCap {
				j.tail = append(j.tail[:0], j.tail[len(j.tail)-jobTailCap:]...)
			}
			j.signalLocked()
			j.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// wait waits for the job's shell to exit (or its timeout), then stops
// what it left behind and marks it exited.
func (j *job) wait(readDone chan struct{}, timeout time.Duration, cleanup func()) {
	waited := make(chan struct{})
	go func() {
		_ = j.cmd.Wait()
		close(waited)
	}()
	var expire <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expire = timer.C
	}
	select {
	case <-waited:
	case <-expire:
		j.stop("timeout")
	}
	<-waited
	j.mu.Lock()
	j.reaping = true // stop no longer signals the scope: it is being released
	j.mu.Unlock()
	j.scope.Signal(syscall.SIGTERM)
	procguard.WaitClosed(readDone, killGrace)
	j.scope.Kill()
	procguard.WaitClosed(readDone, killGrace)
	j.scope.Release()
	cleanup()
	j.mu.Lock()
	j.exited = true
	j.exitCode = exitCode(j.cmd.ProcessState)
	j.signalLocked()
	j.mu.Unlock()
	close(j.done)
}

// stop ends the job: SIGTERM to its process group and cgroup, SIGKILL
// after the grace period. It returns once the job has exited.
func (j *job) stop(why string) {
	j.stopOnce.Do(func() {
		j.mu.Lock()
		if !j.reaping {
			j.killed = why
			j.scope.Signal(syscall.SIGTERM)
		}
		j.mu.Unlock()
		go func() {
			if !procguard.WaitClosed(j.done, killGrace) {
				j.mu.Lock()
				if !j.reaping {
					j.scope.Kill()
				}
				j.mu.Unlock()
			}
		}()
	})
}

func (j *job) signalLocked() {
	close(j.changed)
	j.changed = make(chan struct{})
}

func (j *job) hasExited() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.exited
}

// state describes the job for the model.
func (j *job) stateLocked() string {
	switch {
	case !j.exited:
		return "running"
	case j.killed != "":
		return fmt.Sprintf("stopped by %s, exit: %d", j.killed, j.exitCode)
	}
	return fmt.Sprintf("exited, exit: %d", j.exitCode)
}

// get returns the job with id, or an error result listing the jobs.
func (t *jobTable) get(tool, id string) (*job, *tools.Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, j := range t.jobs {
		if j.id == id {
			return j, nil
		}
	}
	var r tools.Result
	if len(t.jobs) == 0 {
		r = tools.Errorf("%s: no job %q: you have no background jobs; start one with shell and background: true", tool, id)
	} else {
		r = tools.Errorf("%s: no job %q; your jobs: %s", tool, id, t.summaryLocked())
	}
	return nil, &r
}

// summaryLocked lists the jobs as "j1 (running), j2 (exited, exit: 0)".
func (t *jobTable) summaryLocked() string {
	parts := make([]string, 0, len(t.jobs))
	for _, j := range t.jobs {
		j.mu.Lock()
		parts = append(parts, fmt.Sprintf("%s (%s)", j.id, j.stateLocked()))
		j.mu.Unlock()
	}
	return strings.Join(parts, ", ")
}

// pruneLocked forgets the oldest finished jobs beyond maxKeptJobs.
func (t *jobTable) pruneLocked() {
	for len(t.jobs) > maxKeptJobs {
		i := slices.IndexFunc(t.jobs, func(j *job) bool { return j.hasExited() })
		if i < 0 {
			return
		}
		t.jobs = slices.Delete(t.jobs, i, i+1)
	}
}

// note is the jobs' line for the agent's next model request: those
// running, or with news (unread output, an end not yet shown); "" when
// there is none.
func (t *jobTable) note() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	for _, j := range t.jobs {
		j.mu.Lock()
		news := j.total - j.readTotalLocked()
		if !j.exited || news > 0 || !j.reported {
			lines = append(lines, fmt.Sprintf("- %s `%s` (%s, %d bytes of new output)", j.id, clipCommand(j.command), j.stateLocked(), news))
		}
		j.mu.Unlock()
	}
	if len(lines) == 0 {
		return ""
	}
	return "[background jobs] Your background jobs (read their output with job_output, stop them with job_kill; they are stopped when you finish):\n" + strings.Join(lines, "\n")
}

// readTotalLocked is how many bytes of output were read by job_output.
func (j *job) readTotalLocked() int64 { return j.total - j.unread.total }

// closeAll stops every job and waits for them; no job starts afterwards.
func (t *jobTable) closeAll() {
	t.mu.Lock()
	t.closed = true
	jobs := slices.Clone(t.jobs)
	t.mu.Unlock()
	for _, j := range jobs {
		j.stop("agent ended")
	}
	for _, j := range jobs {
		<-j.done
	}
}

// clipCommand shortens a command for one line.
func clipCommand(c string) string {
	return text.Clip(strings.Join(strings.Fields(c), " "), 79)
}
