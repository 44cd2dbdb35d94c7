package sandbox

import (
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// A network namespace can be made on one thread of this process and
// entered by another (setns) when the process may administer the
// network namespaces of its user namespace (CAP_SYS_ADMIN: root, or a
// container's root). Then a command with network deny or loopback starts
// on the fast path, as one with allow does: the preparing thread enters
// a namespace made in advance and forks from it, and the child inherits
// the namespace with the rest; no launcher runs. Making a namespace costs
// milliseconds, so a Box makes one on its first such command and its
// later commands share it (loopback: a server one command starts is
// reachable by the next), and closes it with the box. Without the
// capability (an ordinary user), deny and loopback go through the
// launcher, which a new user namespace gives the rights it needs.

// newNetNS makes a network namespace, with its loopback up when loopback
// is true, and returns a descriptor of it (close-on-exec). The namespace
// is made on a thread locked for the purpose and retired with its
// goroutine, so no other goroutine ever runs in it.
func newNetNS(loopback bool) (int, error) {
	type made struct {
		fd  int
		err error
	}
	c := make(chan made, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			c <- made{-1, fmt.Errorf("make a network namespace: %w", err)}
			return
		}
		if loopback {
			if err := loopbackUp(); err != nil {
				c <- made{-1, err}
				return
			}
		}
		fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			err = fmt.Errorf("open the network namespace: %w", err)
		}
		c <- made{fd, err}
	}()
	m := <-c
	return m.fd, m.err
}

// startInNetNS starts cmd confined by p on a fresh thread that first
// enters the network namespace nsfd (and keeps holes read-only, see
// protectHoles).
func startInNetNS(start func() error, p Policy, s Support, nsfd int, holes []string) func() error {
	return func() error {
		if err := unix.Setns(nsfd, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("enter the network namespace: %w", err)
		}
		if err := prepareThread(protectHoles(p, holes, true), s, true); err != nil {
			return fmt.Errorf("prepare the sandbox: %w", err)
		}
		return start()
	}
}

// netNSCache is a box's network namespace, made on its first command
// with network deny or loopback and closed with the box.
type netNSCache struct {
	mu   sync.Mutex
	fd   int // -1 before it is made, and after close
	made bool
}

// get returns the namespace's descriptor, making it the first time.
func (n *netNSCache) get(loopback bool) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.made {
		return n.fd, nil
	}
	fd, err := newNetNS(loopback)
	if err != nil {
		return -1, err
	}
	n.fd, n.made = fd, true
	return fd, nil
}

// close closes the descriptor; the namespace goes when its last command
// does.
func (n *netNSCache) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.made && n.fd >= 0 {
		_ = unix.Close(n.fd)
	}
	n.fd, n.made = -1, true
}
