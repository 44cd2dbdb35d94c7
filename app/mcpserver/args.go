package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// RunArgs are start_run's arguments.
type RunArgs struct {
	Task         string `json:"task" jsonschema:"the task, as for orchestrator run"`
	Placement    string `json:"placement,omitempty" jsonschema:"where kinds run, e.g. explore=remote,worker=auto (as run --placement)"`
	BudgetTokens int64  `json:"budget_tokens,omitempty" jsonschema:"the run's token budget (default and most: the configured one)"`
	Wait         bool   `json:"wait,omitempty" jsonschema:"wait for the run to end and return its answer, with progress notifications; cancelling the call cancels the run (default: return the run ID at once)"`
}

// ExploreArgs are explore's arguments.
type ExploreArgs struct {
	Question string `json:"question" jsonschema:"the question about the workspace"`
	Agents   int    `json:"agents,omitempty" jsonschema:"explore agents to fan out, 1 to 16 (default 4)"`
	Wait     bool   `json:"wait,omitempty" jsonschema:"wait for the answer, with progress notifications; cancelling the call cancels the run (default: return the run ID at once)"`
}

// RunRef names a run.
type RunRef struct {
	Run  string `json:"run" jsonschema:"the run ID start_run or explore returned"`
	Wait bool   `json:"wait,omitempty" jsonschema:"check_run: wait for the run to end, with progress notifications (cancelling the call stops the wait, not the run)"`
}

// Limits of the arguments.
const (
	maxTaskChars  = 100_000
	defaultAgents = 4
	maxAgents     = 16
)

// invalidParams is the JSON-RPC error for arguments that cannot be used.
func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid arguments: " + fmt.Sprintf(format, args...)}
}

// decodeArgs decodes a call's arguments into T: an object with T's keys
// only, of their types; anything else is invalid params.
func decodeArgs[T any](raw json.RawMessage) (T, error) {
	var a T
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return a, invalidParams("%s must be %s, not %s", te.Field, jsonKind(te.Type.Kind()), te.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field"):
			return a, invalidParams("%s", strings.TrimPrefix(err.Error(), "json: "))
		}
		return a, invalidParams("want an object of the tool's arguments: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return a, invalidParams("one object of arguments, and nothing after it")
	}
	return a, nil
}

// check validates start_run's arguments.
func (a RunArgs) check() error {
	switch {
	case strings.TrimSpace(a.Task) == "":
		return invalidParams("task is empty: say what the run should do")
	case len(a.Task) > maxTaskChars:
		return invalidParams("task is %d characters; at most %d", len(a.Task), maxTaskChars)
	case a.BudgetTokens < 0:
		return invalidParams("budget_tokens must be positive (or left out for the configured budget), got %d", a.BudgetTokens)
	}
	return nil
}

// check validates explore's arguments and fills in the default.
func (a *ExploreArgs) check() error {
	switch {
	case strings.TrimSpace(a.Question) == "":
		return invalidParams("question is empty: ask something about the workspace")
	case len(a.Question) > maxTaskChars:
		return invalidParams("question is %d characters; at most %d", len(a.Question), maxTaskChars)
	case a.Agents < 0 || a.Agents > maxAgents:
		return invalidParams("agents must be from 1 to %d (or left out for %d), got %d", maxAgents, defaultAgents, a.Agents)
	case a.Agents == 0:
		a.Agents = defaultAgents
	}
	return nil
}

// check validates a run reference.
func (a RunRef) check() error {
	if strings.TrimSpace(a.Run) == "" {
		return invalidParams("run is empty: give the ID start_run or explore returned")
	}
	return nil
}

// inputSchema is T's JSON schema as the tool's input schema, with the
// bounds the checks above enforce stated for clients.
func inputSchema[T any](edit func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err) // the argument types are ours: a failure is a bug
	}
	if edit != nil {
		edit(s.Properties)
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// jsonKind names a Go kind as JSON would.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "a whole number"
	}
	return k.String()
}
