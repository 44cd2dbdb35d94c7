package overlay

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
)

// shared is the process's holder, started by the first Shared call.
var shared struct {
	sync.Mutex
	h   *Holder
	err error
}

// Shared is the process's holder, started on first use and probed: an
// overlay mounted in a temporary directory of base (on the filesystem
// the overlays will use), written through its view and seen from inside
// by a command entered with nsenter. The error says why overlays cannot
// be used here; it is remembered.
func Shared(base string) (*Holder, error) {
	shared.Lock()
	defer shared.Unlock()
	if shared.h != nil || shared.err != nil {
		return shared.h, shared.err
	}
	h, err := Start()
	if err == nil {
		if err = probe(h, base); err != nil {
			h.Close()
		}
	}
	if err != nil {
		shared.err = fmt.Errorf("overlay worktrees unavailable: %w", err)
		return nil, shared.err
	}
	shared.h = h
	return h, nil
}

// probe mounts a test overlay below base and checks it works as the
// callers need.
func probe(h *Holder, base string) (err error) {
	if nsenter() == "" {
		return ErrNoNsenter
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(base, strconv.Itoa(os.Getpid())+"-probe-") // a leftover is pruned as its process's
	if err != nil {
		return err
	}
	defer func() {
		if d, err := os.Open(dir); err == nil {
			_ = UnlockWork(int(d.Fd()), "work")
			d.Close()
		}
		os.RemoveAll(dir)
	}()
	p := func(s string) string { return filepath.Join(dir, s) }
	for _, d := range []string{"lower", "upper", "work", "mnt"} {
		if err := os.Mkdir(p(d), 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(p("lower/f"), []byte("lower"), 0o600); err != nil {
		return err
	}
	mnt, err := h.Mount(dir, "lower", "upper", "work", "mnt")
	if err != nil {
		return err
	}
	defer func() {
		if uerr := h.Unmount(mnt); err == nil {
			err = uerr
		}
		mnt.Close()
	}()
	if err := os.WriteFile(filepath.Join(h.View(p("mnt")), "g"), []byte("upper"), 0o600); err != nil {
		return fmt.Errorf("write through the overlay's view: %w", err)
	}
	if _, err := os.Stat(p("upper/g")); err != nil {
		return fmt.Errorf("a write through the view is not in the upper directory: %w", err)
	}
	pre, err := h.Enter(p("mnt"))
	if err != nil {
		return err
	}
	out, err := exec.Command(pre[0], append(pre[1:], "/bin/cat", "f", "g")...).CombinedOutput()
	if err != nil || string(out) != "lowerupper" {
		return errors.Join(errors.New("a command entered at the mount does not see the overlay: "+string(out)), err)
	}
	return nil
}
