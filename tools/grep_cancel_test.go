//go:build unix

package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

type runOutcome struct {
	res Result
	err error
}

// TestGrepCancelMidSearch searches a named pipe that a writer keeps
// feeding forever: the search can only end through the cancellation, which
// comes once the search has certainly started (the writer's open returns
// only when the reader has opened the pipe).
func TestGrepCancelMidSearch(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	fifo := filepath.Join(s.Workspace.Root(), "stream")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("cannot make a named pipe here: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started, writerDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(writerDone)
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0) // blocks until grep opens it
		if err != nil {
			return
		}
		defer f.Close()
		close(started)
		chunk := bytes.Repeat([]byte("no match on this line\n"), 1000)
		for {
			if _, err := f.Write(chunk); err != nil {
				return // the reader closed the pipe
			}
		}
	}()
	done := make(chan runOutcome, 1)
	go func() {
		res, err := Grep().Run(ctx, s, json.RawMessage(`{"pattern": "needle", "path": "stream"}`))
		done <- runOutcome{res, err}
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("grep never opened the pipe")
	}
	cancel()
	select {
	case out := <-done:
		if !errors.Is(out.err, context.Canceled) {
			t.Errorf("cancelled grep returned %+v, %v; want context.Canceled", out.res, out.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("grep did not return after its context was cancelled")
	}
	select {
	case <-writerDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the writer was not released")
	}
}

// TestGrepCancelBigTree cancels a search of a generated tree right after
// starting it: whether the cancellation lands before the walk or during it,
// the result must be the context's error, for grep and find_files alike.
func TestGrepCancelBigTree(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	line := strings.Repeat("lorem ipsum dolor sit amet ", 4) + "\n"
	body := strings.Repeat(line, 300)
	for i := range 300 {
		writeFile(t, s, fmt.Sprintf("d%02d/e%d/f%03d.txt", i%30, i%7, i), body)
	}
	for _, c := range []struct {
		tool Tool
		args string
	}{
		{Grep(), `{"pattern": "n[eo]edle\\d", "mode": "count"}`},
		{FindFiles(), `{"pattern": "*.nothing"}`},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan runOutcome, 1)
		go func() {
			res, err := c.tool.Run(ctx, s, json.RawMessage(c.args))
			done <- runOutcome{res, err}
		}()
		cancel()
		select {
		case out := <-done:
			if !errors.Is(out.err, context.Canceled) {
				t.Errorf("%s: cancelled call returned %+v, %v; want context.Canceled", c.tool.Spec().Name, out.res, out.err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not return after its context was cancelled", c.tool.Spec().Name)
		}
	}
}
