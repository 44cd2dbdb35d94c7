package tools

import (
	"fmt"
	"strings"
	"sync"
)

// TodoItem is one task of an agent's todo list.
type TodoItem struct {
	Task string `json:"task"`
	Done bool   `json:"done"`
}

// TodoList is an agent session's todo list, kept by the todo tool.
type TodoList struct {
	mu    sync.Mutex
	items []TodoItem
}

// Items returns a copy of the list.
func (l *TodoList) Items() []TodoItem {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]TodoItem(nil), l.items...)
}

// Add appends an open task and returns its 1-based index.
func (l *TodoList) Add(task string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, TodoItem{Task: task})
	return len(l.items)
}

// Complete marks the task at 1-based index i done.
func (l *TodoList) Complete(i int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkIndex(i); err != nil {
		return err
	}
	l.items[i-1].Done = true
	return nil
}

// Remove deletes the task at 1-based index i; later tasks move up.
func (l *TodoList) Remove(i int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkIndex(i); err != nil {
		return err
	}
	l.items = append(l.items[:i-1], l.items[i:]...)
	return nil
}

// checkIndex says what is wrong with a 1-based index; l.mu is held.
func (l *TodoList) checkIndex(i int) error {
	switch {
	case len(l.items) == 0:
		return fmt.Errorf("the todo list is empty, so there is no task %d; add one with action=add", i)
	case i < 1 || i > len(l.items):
		return fmt.Errorf("index %d is out of range: valid indexes are 1 to %d", i, len(l.items))
	}
	return nil
}

// String renders the list as the todo tool shows it.
func (l *TodoList) String() string {
	items := l.Items()
	if len(items) == 0 {
		return "Todo list is empty."
	}
	done := 0
	for _, it := range items {
		if it.Done {
			done++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Todo (%d/%d done):", done, len(items))
	for i, it := range items {
		mark := " "
		if it.Done {
			mark = "x"
		}
		fmt.Fprintf(&b, "\n%d. [%s] %s", i+1, mark, it.Task)
	}
	return b.String()
}
