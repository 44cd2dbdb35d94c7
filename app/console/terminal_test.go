package console

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/internal/ptytest"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools/agent"
	"github.com/troupe-ai/troupe/watch"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// Colour only on a terminal, with the real terminal detection on a real
// pseudo-terminal: never with NO_COLOR or TERM=dumb, never on a pipe, a
// file or a buffer; the size is read afresh, so a resize is seen.
func TestTerminalDecision(t *testing.T) {
	p, err := ptytest.Open(91, 23)
	if err != nil {
		peer.Missing(t, "pty", "no pseudo-terminals here: %v", err)
	}
	defer p.Close()
	term := TerminalOf(p.TTY, env("TERM", "xterm"))
	if !term.TTY || !term.Color {
		t.Fatalf("a terminal: %+v", term)
	}
	if c, r := term.Size(); c != 91 || r != 23 {
		t.Errorf("size %dx%d, want 91x23", c, r)
	}
	if err := p.Resize(120, 40); err != nil {
		t.Fatal(err)
	}
	if c, r := term.Size(); c != 120 || r != 40 {
		t.Errorf("after a resize: %dx%d, want 120x40", c, r)
	}
	for _, e := range []func(string) string{env("NO_COLOR", "1", "TERM", "xterm"), env("TERM", "dumb")} {
		if term := TerminalOf(p.TTY, e); !term.TTY || term.Color {
			t.Errorf("NO_COLOR or TERM=dumb: %+v", term)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, out := range []io.Writer{w, file, &bytes.Buffer{}} {
		if term := TerminalOf(out, env("TERM", "xterm")); term.TTY || term.Color {
			t.Errorf("%T is not a terminal: %+v", out, term)
		}
	}
	// The view drawn on the terminal is coloured only when allowed.
	tr := watch.NewTree(2)
	ev, _ := messages.NewEvent("r1", "root", messages.EvtAgentFinished, 1, messages.AgentEnded{Status: "completed"})
	tr.Apply(ev)
	var colored, plain bytes.Buffer
	TerminalOf(p.TTY, env()).View(&colored).Draw(tr, time.Now())
	TerminalOf(p.TTY, env("NO_COLOR", "1")).View(&plain).Draw(tr, time.Now())
	if !strings.Contains(colored.String(), "\x1b[32mfinished") || strings.Contains(plain.String(), "\x1b[32m") || !strings.Contains(plain.String(), "finished") {
		t.Errorf("colour %q / NO_COLOR %q", colored.String(), plain.String())
	}
}

// A question from the wire is shown with its hostile text escaped and its
// arguments clipped on a character boundary.
func TestWriteQuestionIsPrintable(t *testing.T) {
	evil := "\x1b]0;owned\x07\x1b[2J\u009b31m"
	args, _ := json.Marshal(map[string]string{"command": strings.Repeat("日本", 200) + evil})
	var b strings.Builder
	WriteQuestion(&b, messages.AskRequest{V: 1, ID: "q", Run: "r1", Agent: "worker-1", Kind: "worker", Tool: "shell", Question: "run it?" + evil, Args: args})
	WriteQuestion(&b, messages.AskRequest{V: 1, ID: "q", Run: "r1", Agent: "a", Tool: agent.NameAskUser, Question: "pick" + evil, Choices: []string{"red" + evil, "blue"}})
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07\u009b") || !utf8.ValidString(out) {
		t.Errorf("control characters reached the terminal: %q", out)
	}
	for _, want := range []string{`run it?\x1b]0;owned\x07`, "Allow? [y/N] ", "…", `  1. red\x1b]0;owned`, "  2. blue", "Answer: "} {
		if !strings.Contains(out, want) {
			t.Errorf("question lacks %q:\n%s", want, out)
		}
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// While run's terminal approver waits for an answer, the live view draws
// nothing (the question stays visible, the answer being typed is not
// overwritten); the question is printable, and a picked choice comes back
// as the model's own text.
func TestPausingApprover(t *testing.T) {
	in, typed := io.Pipe()
	defer typed.Close()
	var term syncBuf
	var frames bytes.Buffer
	view := &watch.View{W: &frames, Width: 80}
	tr := watch.NewTree(2)
	ev, _ := messages.NewEvent("r1", "root", messages.EvtAgentStarted, 1, messages.AgentStarted{Task: "t"})
	tr.Apply(ev)
	a := PausingApprover{Inner: &actors.TerminalApprover{In: in, Out: &term}, View: view}
	type answer struct {
		ans messages.AskAnswer
		err error
	}
	got := make(chan answer, 1)
	choice := "red \x1b[31mhot\x1b[0m"
	go func() {
		ans, err := a.Ask(t.Context(), messages.AskRequest{V: 1, ID: "q", Run: "r1", Agent: "root", Tool: agent.NameAskUser,
			Question: "which?\x1b[2J", Choices: []string{choice, "blue"}})
		got <- answer{ans, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(term.String(), "Answer: ") {
		if time.Now().After(deadline) {
			t.Fatalf("no question asked: %q", term.String())
		}
		<-time.After(2 * time.Millisecond)
	}
	view.Draw(tr, time.Now())
	if frames.Len() != 0 {
		t.Errorf("the view drew while the question was open: %q", frames.String())
	}
	if strings.Contains(term.String(), "\x1b") {
		t.Errorf("the question reached the terminal unescaped: %q", term.String())
	}
	if _, err := io.WriteString(typed, "1\n"); err != nil {
		t.Fatal(err)
	}
	res := <-got
	if res.err != nil || res.ans.Text != choice {
		t.Fatalf("answer %+v %v, want the first choice's own text", res.ans, res.err)
	}
	view.Draw(tr, time.Now())
	if !strings.Contains(frames.String(), "root") {
		t.Errorf("the view did not resume: %q", frames.String())
	}
}
