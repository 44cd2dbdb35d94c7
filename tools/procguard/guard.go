package procguard

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/troupe-ai/troupe/internal/procsec"
)

// Guard makes sure the processes the shell tool starts do not outlive
// their command, their agent, or this process:
//
//   - every command runs in a process group of its own, with SIGKILL as
//     its parent-death signal, so the shell dies with this process;
//   - where cgroup v2 is writable for this process, every command also runs
//     in a cgroup of its own, which catches what leaves the process group
//     (setsid, double forks); the cgroup is killed as a whole (cgroup.kill)
//     when the command ends;
//   - a small helper process (a shell reading a pipe from this process)
//     holds the list of live process groups and cgroups; when this
//     process dies, even by SIGKILL, the pipe closes and the helper kills
//     them all.
//
// One guard serves a whole run; it is safe for concurrent use. The zero
// value is not usable: use NewProcGuard.
type Guard struct {
	mu     sync.Mutex
	live   map[*Scope]bool
	closed bool

	reaperOnce sync.Once
	reaper     *exec.Cmd
	reaperIn   io.WriteCloser
	reaperErr  error

	cgOnce   sync.Once
	cg       *cgroupBase // nil when cgroups are not used
	cgReason string      // why not
}

// New returns a guard; its helper process and cgroup are set up
// on first use.
func New() *Guard {
	return &Guard{live: map[*Scope]bool{}}
}

// Cgroups reports whether commands run in cgroups of their own, and why
// not when they do not.
func (g *Guard) Cgroups() (bool, string) {
	g.cgOnce.Do(g.setupCgroups)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cg != nil, g.cgReason
}

func (g *Guard) setupCgroups() {
	base, err := newCgroupBase()
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.cgReason = err.Error()
		return
	}
	g.cg = base
	g.tell("+c " + base.dir)
}

// disableCgroups stops using cgroups after a start into one failed.
func (g *Guard) disableCgroups(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cg == nil {
		return
	}
	g.cgReason = fmt.Sprintf("starting a process into a cgroup failed: %v", err)
	g.cg = nil
}

// reaperScript is the helper: it keeps the set of live process groups
// ("g<pgid>") and cgroups ("c<dir>") it is told about, and when its input
// closes (this process ended, however) it kills them all and removes the
// cgroups. It ignores the signals a terminal or a process group kill
// would send it.
const reaperScript = `trap '' INT TERM HUP QUIT PIPE
set -f
live=''
while read -r op arg; do
  case $op in
    +g) live="$live g$arg" ;;
    +c) live="$live c$arg" ;;
    -g|-c) k="${op#-}$arg"; n=''; for e in $live; do [ "$e" = "$k" ] || n="$n $e"; done; live=$n ;;
  esac
done
for e in $live; do
  case $e in
    g*) kill -s KILL -- "-${e#g}" 2>/dev/null ;;
    c*) echo 1 > "${e#c}/cgroup.kill" 2>/dev/null ;;
  esac
done
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
  left=''
  for e in $live; do
    case $e in c*) [ -d "${e#c}" ] && { rmdir "${e#c}" 2>/dev/null || left=1; } ;; esac
  done
  [ -z "$left" ] && break
  sleep 0.1
done
`

// startReaper starts the helper once; a failure is remembered and the
// guard works without it (parent-death signals and kills still apply).
func (g *Guard) startReaper() {
	sh, err := FindShell()
	if err != nil {
		g.reaperErr = err
		return
	}
	cmd := exec.Command(sh, "-c", reaperScript)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.Dir = "/"
	// Its own process group: a Ctrl-C on the terminal does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		g.reaperErr = err
		return
	}
	if err := cmd.Start(); err != nil {
		g.reaperErr = fmt.Errorf("start the process reaper: %w", err)
		return
	}
	g.reaper, g.reaperIn = cmd, in
}

// tell sends one line to the helper; g.mu is held.
func (g *Guard) tell(line string) {
	g.reaperOnce.Do(g.startReaper)
	if g.reaperIn == nil || g.closed {
		return
	}
	_, _ = io.WriteString(g.reaperIn, line+"\n")
}

// CgroupDir is the cgroup the guard puts its commands' cgroups under, ""
// without cgroups.
func (g *Guard) CgroupDir() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cg == nil {
		return ""
	}
	return g.cg.dir
}

// Close kills every process tree still tracked, removes the cgroups and
// stops the helper. The guard may not be used afterwards.
func (g *Guard) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	scopes := make([]*Scope, 0, len(g.live))
	for s := range g.live {
		scopes = append(scopes, s)
	}
	g.mu.Unlock()
	for _, s := range scopes {
		s.Kill()
		s.Release()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	var err error
	if g.cg != nil {
		err = g.cg.remove()
	}
	if g.reaperIn != nil {
		_ = g.reaperIn.Close()
		_ = g.reaper.Wait()
	}
	return err
}

// Scope is one process tree: a process group and, where available, a
// cgroup.
type Scope struct {
	g    *Guard
	cg   *cgroupDir // nil without cgroups
	pgid int
}

// ErrClosed: the guard was closed (the agent or run has ended).
var ErrClosed = errors.New("the agent's processes are being shut down")

// StartPlain is how Start starts a command when no starter is given:
// without the capabilities to inspect other processes.
func StartPlain(cmd *exec.Cmd) error { return procsec.Start(cmd) }

// Start starts the command build returns in a new scope: its own
// process group, SIGKILL when this process dies, and its own cgroup when
// available. build may be called twice: when a start into a cgroup fails,
// cgroups are given up and the command is built and started again.
// starter starts the built command (the agent's sandbox); nil starts it
// with procsec.Start.
func (g *Guard) Start(build func() *exec.Cmd, starter func(*exec.Cmd) error) (*exec.Cmd, *Scope, error) {
	if starter == nil {
		starter = procsec.Start
	}
	g.cgOnce.Do(g.setupCgroups)
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil, nil, ErrClosed
	}
	base := g.cg
	g.mu.Unlock()
	s := &Scope{g: g}
	if base != nil {
		if dir, err := base.child(); err == nil {
			s.cg = dir
			g.mu.Lock()
			g.tell("+c " + dir.path)
			g.mu.Unlock()
		}
	}
	if s.cg != nil {
		cmd := build()
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL,
			UseCgroupFD: true, CgroupFD: s.cg.fd}
		err := starter(cmd)
		if err == nil {
			s.started(cmd.Process.Pid)
			return cmd, s, nil
		}
		s.dropCgroup()
		if !errors.Is(err, syscall.ENOENT) && !errors.Is(err, exec.ErrNotFound) {
			g.disableCgroups(err)
		}
	}
	cmd := build()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := starter(cmd); err != nil {
		return nil, nil, err
	}
	s.started(cmd.Process.Pid)
	return cmd, s, nil
}

func (s *Scope) started(pid int) {
	s.pgid = pid // Setpgid: the leader's pid is the group's id
	g := s.g
	g.mu.Lock()
	defer g.mu.Unlock()
	g.live[s] = true
	g.tell(fmt.Sprintf("+g %d", pid))
}

// Signal sends sig to the process group and to every process of the
// cgroup (those that left the group too).
func (s *Scope) Signal(sig syscall.Signal) {
	_ = syscall.Kill(-s.pgid, sig)
	if s.cg != nil {
		for _, pid := range s.cg.members() {
			_ = syscall.Kill(pid, sig)
		}
	}
}

// Kill sends SIGKILL to the group and kills the cgroup as a whole.
func (s *Scope) Kill() {
	_ = syscall.Kill(-s.pgid, syscall.SIGKILL)
	if s.cg != nil {
		s.cg.kill()
	}
}

// InCgroup reports whether the scope has a cgroup of its own.
func (s *Scope) InCgroup() bool { return s.cg != nil }

// Members are the processes of the scope's cgroup (nil without one).
func (s *Scope) Members() []int {
	if s.cg == nil {
		return nil
	}
	return s.cg.members()
}

// Release kills what is left in the cgroup, removes it and forgets the
// scope. Call it once the group's leader has been waited for.
func (s *Scope) Release() {
	if s.cg != nil {
		if len(s.cg.members()) > 0 {
			s.cg.kill()
		}
		s.cg.waitEmpty(5 * time.Second)
	}
	s.dropCgroup()
	g := s.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live[s] {
		delete(g.live, s)
		g.tell(fmt.Sprintf("-g %d", s.pgid))
	}
}

func (s *Scope) dropCgroup() {
	if s.cg == nil {
		return
	}
	s.cg.remove()
	s.g.mu.Lock()
	s.g.tell("-c " + s.cg.path)
	s.g.mu.Unlock()
	s.cg = nil
}
