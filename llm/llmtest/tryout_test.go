package llmtest

import (
	"strings"
	"testing"
)

// The try-out script is valid, every answer it gives says it is
// scripted, and a change task reaches its worker while a question does
// not.
func TestTryOutScript(t *testing.T) {
	s := TryOut()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, a := range s.Agents {
		last := a.Turns[len(a.Turns)-1]
		if len(last.ToolCalls) == 0 && !strings.HasPrefix(last.Text, "(scripted model)") {
			t.Errorf("%+v ends with %q, not saying it is scripted", a.Match, last.Text)
		}
	}
	srv := New(s)
	defer srv.Close()
	change := &Recorded{Kind: "root", Agent: "a1", Task: "Rename Foo to Bar"}
	question := &Recorded{Kind: "root", Agent: "a2", Task: "Where is the budget enforced?"}
	srv.nextTurn(change) // the plan
	if turn := srv.nextTurn(change); len(turn.ToolCalls) != 1 || !strings.Contains(string(turn.ToolCalls[0].Args), `"worker"`) {
		t.Errorf("a change task's second turn: %+v", turn)
	}
	if turn := srv.nextTurn(question); len(turn.ToolCalls) != 1 || !strings.Contains(string(turn.ToolCalls[0].Args), `"explore"`) {
		t.Errorf("a question's first turn: %+v", turn)
	}
	// Every run's lead agent is "root": a second run walks its script afresh.
	again := &Recorded{Kind: "root", Agent: "a2", Run: "run-2", Task: "Where is the budget enforced?"}
	if turn := srv.nextTurn(again); len(turn.ToolCalls) != 1 || !strings.Contains(string(turn.ToolCalls[0].Args), `"explore"`) {
		t.Errorf("a second run's first turn: %+v", turn)
	}
}
