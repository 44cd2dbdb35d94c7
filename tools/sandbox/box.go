package sandbox

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
)

// Box is the sandbox of one agent's commands: its policy, what the kernel
// supports, and its private TMPDIR, made on the first command and removed
// by Close. It is safe for concurrent use; a nil *Box is "no sandbox"
// (sandbox.mode: off), which callers check for.
type Box struct {
	policy  Policy
	support Support
	detect  func() Support // when set, says what the kernel offers instead of support
	tmpBase string

	// ns is the network namespace the box's commands with network deny
	// or loopback share, where this process can make one (start_linux.go).
	ns netNSCache

	mu     sync.Mutex
	tmp    string
	remove func() error
	closed bool
}

// NewBox returns the box for policy p on a kernel supporting s; the
// private TMPDIR is made under tmpBase ("" for the system's).
func NewBox(p Policy, s Support, tmpBase string) *Box {
	return &Box{policy: p, support: s, tmpBase: tmpBase}
}

// Policy is the box's policy, its TMPDIR among the writable trees once
// made.
func (b *Box) Policy() Policy {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.policy
	if b.tmp != "" {
		p.Writable = append(slices.Clone(p.Writable), b.tmp)
	}
	return p
}

// tmpDir makes the private TMPDIR once.
func (b *Box) tmpDir() (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return "", ErrClosed
	}
	if b.tmp == "" {
		dir, remove, err := TempDir(b.tmpBase)
		if err != nil {
			return "", err
		}
		b.tmp, b.remove = dir, remove
	}
	return b.tmp, nil
}

// Start starts cmd confined by the box, with TMPDIR set to the box's
// private directory.
func (b *Box) Start(cmd *exec.Cmd) error {
	sup, err := b.prepare(cmd)
	if err != nil {
		return err
	}
	return start(cmd, b.Policy(), sup, &b.ns)
}

// prepare sets cmd's TMPDIR to the box's private directory and returns
// what the kernel supports.
func (b *Box) prepare(cmd *exec.Cmd) (Support, error) {
	tmp, err := b.tmpDir()
	if err != nil {
		return Support{}, err
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "TMPDIR=") })
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	sup := b.support
	if b.detect != nil {
		sup = b.detect()
	}
	return sup, nil
}

// Explain is Explain with the box's policy.
func (b *Box) Explain(exitCode int, output string) string {
	return Explain(exitCode, output, b.Policy())
}

// Close removes the private TMPDIR and lets go of the box's network
// namespace; Start fails afterwards.
func (b *Box) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.ns.close()
	if b.remove == nil {
		return nil
	}
	err := b.remove()
	b.remove = nil
	return err
}
