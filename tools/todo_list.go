package tools

import "sync"

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
