package sandbox

import (
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/troupe-ai/troupe/internal/procsec"
)

// Start starts cmd (built by exec.Command, not started) confined by p,
// with what s says this kernel supports, and returns Start's error.
//
// The confinement is prepared on a fresh OS thread and inherited by the
// fork: the thread drops the capabilities, sets no_new_privs, enters the
// Landlock domain and loads the seccomp filter, starts cmd, and then ends
// with its goroutine (locked to it and never unlocked, so the Go runtime
// retires it and no other goroutine ever runs on it; the runtime also
// never clones new threads from a locked one). No extra program runs, so
// the cost is a thread and a few system calls. Because that thread's own
// clone must go through, the filter the command inherits this way does
// not refuse namespace flags to clone (unshare and setns stay refused).
//
// With network deny or loopback, when this process may make network
// namespaces itself (Support.ThreadNetNS), the thread first enters a new one
// (a Box's commands share one, made once). With read-only trees beneath
// a writable one (Policy.ReadOnly, see readonly.go) and a process that may
// make mount namespaces (Support.ThreadMountNS), the thread enters a new
// mount namespace of its own and binds them read-only. Otherwise the
// command starts through the launcher (see Confine): the user, network
// and mount namespaces come with the fork, and the launcher applies the
// rest, the full filter included, before exec.
func Start(cmd *exec.Cmd, p Policy, s Support) error {
	return start(cmd, p, s, nil)
}

// start is Start with the network namespace of a box (nil: a fresh one
// for network deny or loopback).
func start(cmd *exec.Cmd, p Policy, s Support, ns *netNSCache) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if miss := s.Missing(p); p.Required && len(miss) > 0 {
		return fmt.Errorf("%w: %v", ErrUnsupported, miss)
	}
	netNS := p.Network == NetworkDeny || p.Network == NetworkLoopback
	holes := p.holes()
	if len(holes) > 0 && !s.MountNS {
		noteFallback(s.noMountNS())
		p, holes = p.splitWrites(holes), nil
	}
	if (netNS && !s.ThreadNetNS) || (len(holes) > 0 && !s.ThreadMountNS) {
		if err := Confine(cmd, p, s); err != nil {
			return err
		}
		return onFreshThread(cmd, func() error { return startInUserNS(cmd) })
	}
	if netNS {
		if ns == nil {
			ns = &netNSCache{}
			defer ns.close() // the command keeps the namespace
		}
		fd, err := ns.get(p.Network == NetworkLoopback)
		if err != nil {
			return err
		}
		return onFreshThread(cmd, startInNetNS(cmd.Start, p, s, fd, holes))
	}
	return onFreshThread(cmd, func() error {
		if err := prepareThread(protectHoles(p, holes, true), s, false); err != nil {
			return fmt.Errorf("prepare the sandbox: %w", err)
		}
		return cmd.Start()
	})
}

// startInUserNS starts cmd; when it is to get a user namespace of its
// own, with this process dumpable meanwhile (procsec.WhileDumpable): this
// process writes the child's ID maps, which a user other than root
// cannot in a program made non-dumpable (procsec.NoDump: the
// orchestrator and the node are).
func startInUserNS(cmd *exec.Cmd) error {
	if a := cmd.SysProcAttr; a != nil && a.Cloneflags&unix.CLONE_NEWUSER != 0 {
		return procsec.WhileDumpable(cmd.Start)
	}
	return cmd.Start()
}

// onFreshThread runs start on an OS thread of its own, and keeps that
// thread until the process started ends: a parent-death signal
// (SysProcAttr.Pdeathsig) fires when the thread that forked the child
// ends, not the process (go.dev/issue/27505). The thread waits without
// reaping (WNOWAIT), so the caller's cmd.Wait works as usual; then it
// ends with its goroutine.
func onFreshThread(cmd *exec.Cmd, start func() error) error {
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: when this goroutine returns, its thread,
		// whatever was done to it, is terminated.
		runtime.LockOSThread()
		err := start()
		if err != nil || cmd == nil || cmd.Process == nil {
			errc <- err
			return
		}
		// Opened before the caller can reap the child: the pidfd names
		// this process even if its pid is reused later.
		fd, ferr := unix.PidfdOpen(cmd.Process.Pid, 0)
		errc <- nil
		var info unix.Siginfo
		for {
			if ferr == nil {
				err = unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOWAIT, nil)
			} else {
				err = unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			}
			if err != unix.EINTR {
				break
			}
		}
		if ferr == nil {
			_ = unix.Close(fd)
		}
	}()
	return <-errc
}

// prepareThread confines the calling thread as the launcher confines
// itself, less the clone rules of the seccomp filter; inNetNS says the
// thread is in a network namespace of its own.
func prepareThread(p Policy, s Support, inNetNS bool) error {
	if err := dropCaps(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if s.LandlockABI > 0 {
		if err := restrictThread(p, inNetNS); err != nil {
			return fmt.Errorf("apply landlock: %w", err)
		}
	}
	if s.Seccomp {
		return loadSeccomp(false, false)
	}
	return nil
}
