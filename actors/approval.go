package actors

import (
	"bufio"
	"context"
	"fmt"
	"github.com/troupe-ai/troupe/messages"
	"io"
	"strings"
	"sync"
)

// ApprovalRequest is a mutating call waiting for a human's yes or no; it
// is the wire type, so an approver over NATS can take it as it is.
type ApprovalRequest = messages.AskRequest

// Approver answers approval requests. Approve blocks until it has an
// answer or ctx ends (which counts as no).
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (bool, error)
}

// approve asks the run's approver, bounded by the approval timeout; with
// no approver (headless), or on timeout, the answer is no.
func (rt *runtime) approve(ctx context.Context, req ApprovalRequest) (bool, string) {
	if rt.approver == nil {
		return false, "no approver (headless run)"
	}
	ctx, cancel := context.WithTimeout(ctx, rt.settings.ApprovalWait())
	defer cancel()
	ok, err := rt.approver.Approve(ctx, req)
	switch {
	case err != nil && ctx.Err() != nil:
		return false, "timed out waiting for approval"
	case err != nil:
		return false, err.Error()
	case ok:
		return true, "user"
	}
	return false, "denied by the user"
}

// TerminalApprover asks on a terminal: it prints the call and reads y/n.
// One question at a time.
type TerminalApprover struct {
	In  io.Reader
	Out io.Writer

	mu    sync.Mutex
	lines chan string
}

// Approve prints the request and waits for a line starting with y or n.
func (t *TerminalApprover) Approve(ctx context.Context, req ApprovalRequest) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lines == nil {
		t.lines = make(chan string)
		go func() {
			sc := bufio.NewScanner(t.In)
			for sc.Scan() {
				t.lines <- sc.Text()
			}
			close(t.lines)
		}()
	}
	args := string(req.Args)
	if len(args) > 400 {
		args = args[:400] + "…"
	}
	fmt.Fprintf(t.Out, "\n%s agent %s wants to run %s %s\nAllow? [y/N] ", req.Kind, req.Agent, req.Tool, args)
	select {
	case line, ok := <-t.lines:
		if !ok {
			return false, fmt.Errorf("no terminal input")
		}
		return strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y"), nil
	case <-ctx.Done():
		fmt.Fprintln(t.Out, "(no answer)")
		return false, ctx.Err()
	}
}
