//go:build !linux

package sandbox

import (
	"errors"
	"os/exec"
)

func probeOnce() Support {
	return Support{Notes: []string{"the sandbox needs Linux"}}
}

// Confine leaves cmd as it is outside Linux, or refuses when p is
// required.
func Confine(cmd *exec.Cmd, p Policy, s Support) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p.Required {
		return errors.Join(ErrUnsupported, errors.New("the sandbox needs Linux"))
	}
	return nil
}

// MaybeRunLauncher does nothing outside Linux.
func MaybeRunLauncher() {}

// Start is cmd.Start outside Linux, or a refusal when p is required.
func Start(cmd *exec.Cmd, p Policy, s Support) error {
	if err := Confine(cmd, p, s); err != nil {
		return err
	}
	return cmd.Start()
}

// netNSCache is a box's network namespace, on Linux only.
type netNSCache struct{}

func (*netNSCache) close() {}

func start(cmd *exec.Cmd, p Policy, s Support, _ *netNSCache) error { return Start(cmd, p, s) }

// StartEntered is Start outside Linux, where no tree is entered.
func (b *Box) StartEntered(cmd *exec.Cmd, _ []string) error { return b.Start(cmd) }
