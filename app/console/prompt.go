package console

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/text"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools/agent"
	"github.com/troupe-ai/troupe/watch"
)

// maxArgsShown bounds the tool arguments a question shows, in bytes.
const maxArgsShown = 390

// IsOpenQuestion tells an ask_user question (answered in words) from an
// approval (answered yes or no).
func IsOpenQuestion(req messages.AskRequest) bool { return req.Tool == agent.NameAskUser }

// WriteQuestion puts a question from the wire to a person on w. Every text
// in it came from a model or from the wire, so it is made printable and
// the arguments are clipped on a character boundary.
func WriteQuestion(w io.Writer, req messages.AskRequest) {
	who := fmt.Sprintf("%s agent %s (run %s)", watch.Printable(req.Kind), watch.Printable(req.Agent), watch.Printable(req.Run))
	if IsOpenQuestion(req) {
		fmt.Fprintf(w, "\n%s asks: %s\n", who, watch.Printable(req.Question))
		for i, c := range req.Choices {
			fmt.Fprintf(w, "  %d. %s\n", i+1, watch.Printable(c))
		}
		fmt.Fprint(w, "Answer: ")
		return
	}
	fmt.Fprintf(w, "\n%s asks: %s %s\n%sAllow? [y/N] ", who, watch.Printable(req.Question),
		watch.Printable(text.Clip(string(req.Args), maxArgsShown)), actors.DiffBlock(req))
}

// PrintableRequest is req with every text a person will see made
// printable, for an approver that prints it as it is.
func PrintableRequest(req messages.AskRequest) messages.AskRequest {
	req.Question, req.Kind, req.Agent = watch.Printable(req.Question), watch.Printable(req.Kind), watch.Printable(req.Agent)
	req.Args = []byte(watch.Printable(text.Clip(string(req.Args), maxArgsShown)))
	choices := make([]string, len(req.Choices))
	for i, c := range req.Choices {
		choices[i] = watch.Printable(c)
	}
	req.Choices = choices
	return req
}

// PausingApprover asks on the terminal the live view draws on: the view
// pauses while a question is open, so the redraw neither hides the
// question nor overwrites the answer being typed, and what the question
// shows is printable.
type PausingApprover struct {
	Inner *actors.TerminalApprover
	View  *watch.View // nil: nothing drawn on the terminal
}

// pause pauses the view and returns what resumes it.
func (p PausingApprover) pause() func() {
	if p.View == nil {
		return func() {}
	}
	p.View.Pause()
	return p.View.Resume
}

// Approve asks for a yes or no.
func (p PausingApprover) Approve(ctx context.Context, req actors.ApprovalRequest) (bool, error) {
	defer p.pause()()
	return p.Inner.Approve(ctx, PrintableRequest(req))
}

// Ask puts an open question; a picked choice is answered with its own
// text, not the printable form shown.
func (p PausingApprover) Ask(ctx context.Context, req messages.AskRequest) (messages.AskAnswer, error) {
	defer p.pause()()
	shown := PrintableRequest(req)
	ans, err := p.Inner.Ask(ctx, shown)
	if err == nil {
		for i, c := range shown.Choices {
			if ans.Text == c && strings.TrimSpace(c) != "" {
				ans.Text = req.Choices[i]
				break
			}
		}
	}
	return ans, err
}
