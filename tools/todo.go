package tools

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
)

//go:embed todo.md
var todoDoc string

// TodoParams are todo's arguments.
type TodoParams struct {
	Action string `json:"action" jsonschema:"add, complete, remove or list"`
	Task   string `json:"task,omitempty" jsonschema:"the task's text, for add"`
	Index  int    `json:"index,omitempty" jsonschema:"the task's number in the list, 1-based, for complete and remove"`
}

// Todo returns the todo tool: the agent's own task list for this session.
// It touches no files, so it is read-only in the workspace's sense; the
// list has its own lock, so calls need no scheduling.
func Todo() Tool {
	return New(Spec{Name: NameTodo, Truncation: HeadLines(200), Description: todoDoc, ReadOnly: true, Cacheable: false,
		Parallel: ParallelSafe, Tier: TierAlways}, runTodo,
		Enum("action", "add", "complete", "remove", "list"), Minimum("index", 1))
}

func runTodo(ctx context.Context, s *Session, p TodoParams) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	list := s.Todos
	var err error
	switch p.Action {
	case "add":
		task := strings.Join(strings.Fields(p.Task), " ")
		if task == "" {
			return Errorf("task is required for action=add: give the text of the task to add"), nil
		}
		list.Add(task)
	case "complete", "remove":
		if p.Index == 0 {
			return todoError(list, fmt.Sprintf("index is required for action=%s: give the task's number in the list", p.Action)), nil
		}
		if p.Action == "complete" {
			err = list.Complete(p.Index)
		} else {
			err = list.Remove(p.Index)
		}
	case "list":
	default: // the schema's enum refuses anything else; kept for safety
		return Errorf("unknown action %q: use add, complete, remove or list", p.Action), nil
	}
	if err != nil {
		return todoError(list, err.Error()), nil
	}
	items := list.Items()
	done := 0
	for _, it := range items {
		if it.Done {
			done++
		}
	}
	return Text(list.String()).WithMeta("items", len(items)).WithMeta("done", done), nil
}

// todoError is an error result that shows the list as it stands, so the
// model can pick the right index.
func todoError(list *TodoList, msg string) Result {
	return Errorf("%s\n\n%s", msg, list.String())
}
