package sandbox

import (
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// Start starts cmd (built by exec.Command, not started) confined by p,
// with what s says this kernel supports, and returns Start's error.
//
// With network allow (the common case) the confinement is prepared on a
// fresh OS thread and inherited by the fork: the thread drops the
// capabilities, sets no_new_privs, enters the Landlock domain and loads
// the seccomp filter, starts cmd, and then ends with its goroutine
// (locked to it and never unlocked, so the Go runtime retires it and no
// other goroutine ever runs on it; the runtime also never clones new
// threads from a locked one). No extra program runs, so the cost is a
// thread and a few system calls. Because that thread's own clone must go
// through, the filter the command inherits this way does not refuse
// namespace flags to clone (unshare and setns stay refused).
//
// With network deny or loopback the command starts through the launcher
// (see Confine): the user and network namespaces come with the fork, and
// the launcher applies the rest, the full filter included, before exec.
func Start(cmd *exec.Cmd, p Policy, s Support) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if miss := s.Missing(p); p.Required && len(miss) > 0 {
		return fmt.Errorf("%w: %v", ErrUnsupported, miss)
	}
	if p.Network == NetworkDeny || p.Network == NetworkLoopback {
		if err := Confine(cmd, p, s); err != nil {
			return err
		}
		return onFreshThread(func() error { return cmd.Start() })
	}
	return onFreshThread(func() error {
		if err := prepareThread(p, s); err != nil {
			return fmt.Errorf("prepare the sandbox: %w", err)
		}
		return cmd.Start()
	})
}

// onFreshThread runs fn on an OS thread of its own that ends with it.
func onFreshThread(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: when this goroutine returns, its thread,
		// whatever was done to it, is terminated.
		runtime.LockOSThread()
		errc <- fn()
	}()
	return <-errc
}

// prepareThread confines the calling thread as the launcher confines
// itself, less the clone rules of the seccomp filter.
func prepareThread(p Policy, s Support) error {
	if err := dropCaps(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if s.LandlockABI > 0 {
		if err := restrictThread(p); err != nil {
			return fmt.Errorf("apply landlock: %w", err)
		}
	}
	if s.Seccomp {
		return loadSeccomp(false, false)
	}
	return nil
}
