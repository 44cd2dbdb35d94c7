// Package ptytest opens pseudo-terminals for tests (Linux): a program's
// output on the terminal side behaves as on a real terminal (isatty, a
// window size), and the test reads what it drew from the controlling side.
// It is the few ioctls that github.com/creack/pty wraps; we need no more.
package ptytest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// PTY is an open pseudo-terminal: TTY is the terminal side a program
// writes to; what it writes collects in Output.
type PTY struct {
	TTY    *os.File
	master *os.File
	mu     sync.Mutex
	out    bytes.Buffer
	done   chan struct{}
}

// Open opens a pseudo-terminal of cols×rows and starts collecting what is
// written to it.
func Open(cols, rows int) (*PTY, error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil { // unlockpt
		m.Close()
		return nil, fmt.Errorf("unlock pty: %w", err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN) // ptsname
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("pty number: %w", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, err
	}
	p := &PTY{TTY: tty, master: m, done: make(chan struct{})}
	if err := p.Resize(cols, rows); err != nil {
		p.Close()
		return nil, err
	}
	go p.read()
	return p, nil
}

func (p *PTY) read() {
	defer close(p.done)
	b := make([]byte, 32<<10)
	for {
		n, err := p.master.Read(b)
		p.mu.Lock()
		p.out.Write(b[:n])
		p.mu.Unlock()
		if err != nil { // EIO once every terminal side is closed
			return
		}
	}
}

// Resize sets the terminal's window size.
func (p *PTY) Resize(cols, rows int) error {
	return unix.IoctlSetWinsize(int(p.TTY.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)})
}

// Output is what was written to the terminal so far (the line discipline
// turns "\n" into "\r\n").
func (p *PTY) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// CloseTTY closes this process's copy of the terminal side (after handing
// it to a child process, so that the reader sees the end when the child
// exits).
func (p *PTY) CloseTTY() error { return p.TTY.Close() }

// Wait waits until every terminal side is closed and all output is read.
func (p *PTY) Wait() { <-p.done }

// Close closes both sides.
func (p *PTY) Close() error {
	var err error
	for _, f := range []*os.File{p.TTY, p.master} {
		if e := f.Close(); e != nil && !errors.Is(e, os.ErrClosed) {
			err = errors.Join(err, e)
		}
	}
	return err
}

var _ io.Closer = (*PTY)(nil)
