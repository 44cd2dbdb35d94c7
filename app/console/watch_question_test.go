package console

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/watch"
)

// watch --interactive: a question from the wire pauses the tree's redraw
// until it is answered, is shown printable, and the typed answer goes back
// to the agent that asked.
func TestWatchQuestionPausesTheView(t *testing.T) {
	emb, err := bus.StartEmbedded(t.Context(), bus.EmbeddedOptions{Ephemeral: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Shutdown(context.Background())
	conn, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: emb.URL()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ans, err := conn.Answer("", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer ans.Stop()
	in, typed := io.Pipe()
	defer typed.Close()
	var prompt syncBuf
	var frames bytes.Buffer
	view := &watch.View{W: &frames, Width: 80}
	tr := watch.NewTree(2)
	ev, _ := messages.NewEvent("r1", "root", messages.EvtAgentStarted, 1, messages.AgentStarted{Task: "t"})
	tr.Apply(ev)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go AnswerQuestions(ctx, ans, in, &prompt, view)
	approved := make(chan bool, 1)
	go func() {
		qctx, qcancel := context.WithTimeout(ctx, 30*time.Second)
		defer qcancel()
		ok, _ := conn.NewApprover(zerolog.Nop()).Approve(qctx, messages.AskRequest{V: 1, ID: "q1", Run: "r1", Agent: "worker-1",
			Kind: "worker", Tool: "shell", Question: "run this?\x1b[2J", Args: json.RawMessage(`{"command":"make \u001b]0;x\u0007"}`)})
		approved <- ok
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(prompt.String(), "Allow? [y/N] ") {
		if time.Now().After(deadline) {
			t.Fatalf("no question shown: %q", prompt.String())
		}
		<-time.After(2 * time.Millisecond)
	}
	view.Draw(tr, time.Now())
	if frames.Len() != 0 {
		t.Errorf("the tree was redrawn over an open question: %q", frames.String())
	}
	if strings.ContainsRune(prompt.String(), 0x1b) || !strings.Contains(prompt.String(), `run this?\x1b[2J`) {
		t.Errorf("the question is not printable: %q", prompt.String())
	}
	if _, err := io.WriteString(typed, "y\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case ok := <-approved:
		if !ok {
			t.Error("the typed yes did not approve")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no answer came back")
	}
	view.Draw(tr, time.Now())
	if !strings.Contains(frames.String(), "root") {
		t.Errorf("the view did not resume after the answer: %q", frames.String())
	}
}
