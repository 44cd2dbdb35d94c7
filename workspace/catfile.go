package workspace

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// catFileIdle is how long a Repo's object reader stays up unused.
const catFileIdle = 10 * time.Second

// objectReader reads a repository's objects through one long-lived `git
// cat-file --batch`, so an apply reads its trees and blobs without
// starting a git process each time. It stops after catFileIdle unused
// (and when the Repo is closed) and starts again on the next read. Safe
// for concurrent use: reads take turns.
type objectReader struct {
	g git

	mu    sync.Mutex
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	timer *time.Timer
}

// errMissing is returned by read for an object the repository lacks.
var errMissing = errors.New("object missing")

// read returns the type and contents of the object called name (an ID
// or an expression such as <id>^{tree}); errMissing when there is none.
func (o *objectReader) read(ctx context.Context, name string) (string, []byte, error) {
	if strings.ContainsAny(name, "\n ") {
		return "", nil, fmt.Errorf("read object %q: bad name", name)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	if o.cmd == nil {
		if err := o.start(); err != nil {
			return "", nil, fmt.Errorf("read object %s: %w", name, err)
		}
	}
	typ, data, err := o.exchange(name)
	if err != nil && !errors.Is(err, errMissing) {
		o.stop()
		return "", nil, fmt.Errorf("read object %s: %w", name, err)
	}
	o.timer.Reset(catFileIdle)
	return typ, data, err
}

// size returns the size of the object called name, without reading it;
// errMissing when there is none.
func (o *objectReader) size(ctx context.Context, name string) (int64, error) {
	if strings.ContainsAny(name, "\n ") {
		return 0, fmt.Errorf("read object %q: bad name", name)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if o.cmd == nil {
		if err := o.start(); err != nil {
			return 0, fmt.Errorf("read object %s: %w", name, err)
		}
	}
	n, err := o.info(name)
	if err != nil && !errors.Is(err, errMissing) {
		o.stop()
		return 0, fmt.Errorf("read object %s: %w", name, err)
	}
	o.timer.Reset(catFileIdle)
	return n, err
}

// info asks for one object's size and reads the answer.
func (o *objectReader) info(name string) (int64, error) {
	if _, err := io.WriteString(o.in, "info "+name+"\n"); err != nil {
		return 0, err
	}
	head, err := o.out.ReadString('\n')
	if err != nil {
		return 0, err
	}
	f := strings.Fields(head)
	if len(f) == 2 && f[1] == "missing" {
		return 0, errMissing
	}
	if len(f) != 3 {
		return 0, fmt.Errorf("cat-file: bad header %q", head)
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("cat-file: bad header %q", head)
	}
	return n, nil
}

// exchange asks for one object and reads the answer.
func (o *objectReader) exchange(name string) (string, []byte, error) {
	if _, err := io.WriteString(o.in, "contents "+name+"\n"); err != nil {
		return "", nil, err
	}
	head, err := o.out.ReadString('\n')
	if err != nil {
		return "", nil, err
	}
	f := strings.Fields(head)
	if len(f) == 2 && f[1] == "missing" {
		return "", nil, errMissing
	}
	if len(f) != 3 {
		return "", nil, fmt.Errorf("cat-file: bad header %q", head)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil || n < 0 {
		return "", nil, fmt.Errorf("cat-file: bad header %q", head)
	}
	data := make([]byte, n+1) // the contents and a newline
	if _, err := io.ReadFull(o.out, data); err != nil {
		return "", nil, err
	}
	return f[1], data[:n], nil
}

// start starts cat-file; o.mu is held.
func (o *objectReader) start() error {
	cmd, err := o.g.command(context.Background(), "cat-file", "--batch-command") // git ≥ 2.36
	if err != nil {
		return err
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return ErrNoGit
		}
		return err
	}
	o.cmd, o.in, o.out = cmd, in, bufio.NewReaderSize(out, 64<<10)
	if o.timer == nil {
		o.timer = time.AfterFunc(catFileIdle, o.idle)
	}
	return nil
}

// idle stops cat-file when it was not used for catFileIdle.
func (o *objectReader) idle() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stop()
}

// stop ends cat-file (its input closed, it exits); o.mu is held.
func (o *objectReader) stop() {
	if o.cmd == nil {
		return
	}
	o.in.Close()
	_ = o.cmd.Wait()
	o.cmd, o.in, o.out = nil, nil, nil
}

// close stops cat-file now.
func (o *objectReader) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stop()
	if o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
}
