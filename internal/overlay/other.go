//go:build !linux

package overlay

import (
	"errors"
	"os"
	"os/exec"
)

// ErrUnsupported: overlays are Linux's.
var ErrUnsupported = errors.New("overlay worktrees need Linux")

// ErrNoNsenter says util-linux's nsenter was not found.
var ErrNoNsenter = errors.New("nsenter not found")

// Holder does not exist outside Linux.
type Holder struct{}

// Shared fails outside Linux.
func Shared(string) (*Holder, error) { return nil, ErrUnsupported }

// MaybeRunHolder does nothing outside Linux.
func MaybeRunHolder() {}

// Pid is 0.
func (h *Holder) Pid() int { return 0 }

// View is target.
func (h *Holder) View(target string) string { return target }

// Mount fails.
func (h *Holder) Mount(_, _, _, _, _ string) (*os.File, error) { return nil, ErrUnsupported }

// MountFrom fails.
func (h *Holder) MountFrom(_, _, _, _, _, _ string) (*os.File, error) { return nil, ErrUnsupported }

// ReadOnly fails.
func (h *Holder) ReadOnly(_, _ string) error { return ErrUnsupported }

// Unmount fails.
func (h *Holder) Unmount(*os.File) error { return ErrUnsupported }

// Enter fails.
func (h *Holder) Enter(string) ([]string, error) { return nil, ErrUnsupported }

// EnterHere fails.
func (h *Holder) EnterHere() ([]string, error) { return nil, ErrUnsupported }

// Wrap fails.
func (h *Holder) Wrap(*exec.Cmd, string) error { return ErrUnsupported }

// UnlockWork does nothing.
func UnlockWork(int, string) error { return nil }

// Close does nothing.
func (h *Holder) Close() error { return nil }
