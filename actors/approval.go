package actors

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/troupe-ai/troupe/internal/text"
	"github.com/troupe-ai/troupe/messages"
	agenttools "github.com/troupe-ai/troupe/tools/agent"
)

// ApprovalRequest is a mutating call waiting for a human's yes or no; it
// is the wire type, so an approver over NATS can take it as it is.
type ApprovalRequest = messages.AskRequest

// Approver answers approval requests. Approve blocks until it has an
// answer or ctx ends (which counts as no).
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (bool, error)
}

// Asker is an Approver that can also put open questions (ask_user): the
// terminal approver and the NATS approver are both.
type Asker interface {
	Ask(ctx context.Context, req messages.AskRequest) (messages.AskAnswer, error)
}

// agentAsker is an agent's agenttools.Asker: its questions go to the run's
// approver, bounded by the approval timeout.
type agentAsker struct{ a *agent }

func (q agentAsker) AskUser(ctx context.Context, question string, choices []string) (string, error) {
	a := q.a
	asker, ok := a.rt.approver.(Asker)
	if !ok {
		return "", agenttools.ErrNobodyToAsk
	}
	ctx, cancel := context.WithTimeout(ctx, a.rt.settings.ApprovalWait())
	defer cancel()
	ans, err := asker.Ask(ctx, messages.AskRequest{V: messages.ProtocolVersion, ID: uuid.NewString(), Run: a.rt.run,
		Agent: a.spec.id, Kind: a.spec.kind.Name, Tool: agenttools.NameAskUser, Question: question, Choices: choices})
	if err != nil {
		return "", err
	}
	return ans.Text, nil
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

// Ask prints an open question (with numbered choices) and returns the
// line typed, or the choice its number names.
func (t *TerminalApprover) Ask(ctx context.Context, req messages.AskRequest) (messages.AskAnswer, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.startReading()
	fmt.Fprintf(t.Out, "\n%s agent %s asks: %s\n", req.Kind, req.Agent, req.Question)
	for i, c := range req.Choices {
		fmt.Fprintf(t.Out, "  %d. %s\n", i+1, c)
	}
	fmt.Fprint(t.Out, "Answer: ")
	select {
	case line, ok := <-t.lines:
		if !ok {
			return messages.AskAnswer{}, fmt.Errorf("no terminal input")
		}
		line = strings.TrimSpace(line)
		if n, err := strconv.Atoi(line); err == nil && n >= 1 && n <= len(req.Choices) {
			line = req.Choices[n-1]
		}
		return messages.AskAnswer{V: messages.ProtocolVersion, ID: req.ID, Text: line, AnsweredBy: "terminal"}, nil
	case <-ctx.Done():
		fmt.Fprintln(t.Out, "(no answer)")
		return messages.AskAnswer{}, ctx.Err()
	}
}

// Approve prints the request and waits for a line starting with y or n.
func (t *TerminalApprover) Approve(ctx context.Context, req ApprovalRequest) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.startReading()
	args := text.Clip(string(req.Args), 400)
	fmt.Fprintf(t.Out, "\n%s agent %s wants to run %s %s\n%sAllow? [y/N] ", req.Kind, req.Agent, req.Tool, args, DiffBlock(req))
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

// DiffBlock is what an approval prompt shows, before it asks, of the
// change a file tool's call would make: the diff, indented, with control
// characters written as escapes so file content cannot drive the
// terminal, or why there is none; "" for other tools.
func DiffBlock(req ApprovalRequest) string {
	if req.Diff == "" {
		if req.NoDiff != "" {
			return "No diff to show: " + strings.Map(func(r rune) rune {
				if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
					return ' '
				}
				return r
			}, req.NoDiff) + "\n"
		}
		return ""
	}
	var b strings.Builder
	b.WriteString("The change it would make:\n")
	for _, l := range strings.Split(strings.TrimSuffix(req.Diff, "\n"), "\n") {
		b.WriteString("    ")
		for _, r := range strings.TrimSuffix(l, "\r") {
			if r != '\t' && (r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0) {
				fmt.Fprintf(&b, "\\x%02x", r)
				continue
			}
			b.WriteRune(r)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// startReading starts the goroutine that reads lines from In (once).
func (t *TerminalApprover) startReading() {
	if t.lines != nil {
		return
	}
	t.lines = make(chan string)
	go func() {
		sc := bufio.NewScanner(t.In)
		for sc.Scan() {
			t.lines <- sc.Text()
		}
		close(t.lines)
	}()
}
