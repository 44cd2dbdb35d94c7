package tools

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestTodoGolden(t *testing.T) {
	t.Parallel()
	// One session; each step's output is checked against its golden file,
	// so the steps also test that the list persists between calls.
	s := newTestSession(t)
	steps := []struct{ name, args string }{
		{"list_empty", `{"action":"list"}`},
		{"complete_on_empty", `{"action":"complete","index":1}`},
		{"add_first", `{"action":"add","task":"write the parser"}`},
		{"add_second", `{"action":"add","task":"add tests"}`},
		{"add_multiline", `{"action":"add","task":"  update\n  docs  "}`},
		{"complete", `{"action":"complete","index":1}`},
		{"complete_again", `{"action":"complete","index":1}`},
		{"index_too_big", `{"action":"complete","index":4}`},
		{"index_zero", `{"action":"remove","index":0}`},
		{"index_missing", `{"action":"remove"}`},
		{"add_without_task", `{"action":"add"}`},
		{"add_blank_task", `{"action":"add","task":"   "}`},
		{"bad_action", `{"action":"finish","index":1}`},
		{"missing_action", `{"task":"x"}`},
		{"remove_middle", `{"action":"remove","index":2}`},
		{"list", `{"action":"list"}`},
		{"remove_all_1", `{"action":"remove","index":1}`},
		{"remove_all_2", `{"action":"remove","index":1}`},
	}
	for _, st := range steps {
		golden(t, "todo/"+st.name, resultForGolden(callFileTool(t, s, Todo(), st.args)))
	}
}

func TestTodoPerSession(t *testing.T) {
	t.Parallel()
	a, b := newTestSession(t), newTestSession(t)
	callFileTool(t, a, Todo(), `{"action":"add","task":"only in a"}`)
	if got := callFileTool(t, b, Todo(), `{"action":"list"}`).Text; got != "Todo list is empty." {
		t.Fatalf("session b sees %q", got)
	}
}

func TestTodoConcurrentAdds(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if res := callFileTool(t, s, Todo(), fmt.Sprintf(`{"action":"add","task":"task %d"}`, i)); res.IsError {
				t.Errorf("add %d: %s", i, res.Text)
			}
		})
	}
	wg.Wait()
	got := callFileTool(t, s, Todo(), `{"action":"list"}`).Text
	if !strings.HasPrefix(got, fmt.Sprintf("Todo (0/%d done):", n)) {
		t.Fatalf("after %d concurrent adds the list starts %q", n, got[:min(len(got), 40)])
	}
	if items := s.Todos.Items(); len(items) != n {
		t.Fatalf("got %d items, want %d", len(items), n)
	}
}
