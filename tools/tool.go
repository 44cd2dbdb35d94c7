package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// Tool is one tool: its spec and a run function over raw JSON arguments.
// Build tools with New from a typed params struct; the framework generates
// the schema, validates and decodes the arguments before Run sees them.
type Tool interface {
	Spec() Spec
	// Paths returns the workspace paths (as the model wrote them) that a call
	// with these arguments reads or mutates; nil when it names none or the
	// arguments do not decode. The executor serializes per-path mutations
	// and the cache invalidates on them.
	Paths(args json.RawMessage) []string
	// Run validates args and runs the tool. A bad argument is an error
	// Result, never a Go error.
	Run(ctx context.Context, s *Session, args json.RawMessage) (Result, error)
}

// ArgChecker is implemented by tools that can tell whether a call's
// arguments would be accepted without running it (every tool built with
// New): a call whose arguments fail is refused before anyone is asked to
// approve it.
type ArgChecker interface {
	CheckArgs(args json.RawMessage) error
}

// PathLister is implemented by params structs whose calls touch paths.
type PathLister interface {
	TouchedPaths() []string
}

// dirScope is the scope of a call over a directory argument: the directory,
// or the workspace root when it is omitted.
func dirScope(path string) []string {
	if path == "" {
		return []string{"."}
	}
	return []string{path}
}

// RunFunc runs a tool with decoded, validated params.
type RunFunc[P any] func(ctx context.Context, s *Session, p P) (Result, error)

// SchemaEdit adjusts a generated schema: enums, bounds, descriptions that
// struct tags cannot express.
type SchemaEdit func(*jsonschema.Schema)

// Enum restricts property name to the given values.
func Enum(name string, values ...any) SchemaEdit {
	return func(s *jsonschema.Schema) {
		if p := s.Properties[name]; p != nil {
			p.Enum = values
		}
	}
}

// Minimum sets the inclusive lower bound of a numeric property.
func Minimum(name string, v float64) SchemaEdit {
	return func(s *jsonschema.Schema) {
		if p := s.Properties[name]; p != nil {
			p.Minimum = &v
		}
	}
}

// Maximum sets the inclusive upper bound of a numeric property.
func Maximum(name string, v float64) SchemaEdit {
	return func(s *jsonschema.Schema) {
		if p := s.Properties[name]; p != nil {
			p.Maximum = &v
		}
	}
}

type typedTool[P any] struct {
	spec   Spec
	schema func() *jsonschema.Schema
	run    RunFunc[P]
}

// New builds a Tool from a typed params struct P and its run function. The
// JSON Schema of P is generated from its fields (json tags for names,
// omitempty for optional fields, jsonschema tags for descriptions) and
// adjusted by edits, on first use (a call, or Spec.SchemaJSON): a process
// that builds every tool to look up one, as a CLI command does, does not
// pay for the schemas of the others. It panics if P cannot be described,
// which is a programming error caught by the registry's tests.
func New[P any](spec Spec, run RunFunc[P], edits ...SchemaEdit) Tool {
	name := spec.Name
	schema := sync.OnceValue(func() *jsonschema.Schema {
		schema, err := jsonschema.For[P](nil)
		if err != nil {
			panic(fmt.Sprintf("tools: schema for %s: %v", name, err))
		}
		for _, e := range edits {
			e(schema)
		}
		return schema
	})
	spec.Schema = nil
	spec.schema = sync.OnceValue(func() json.RawMessage {
		raw, err := json.Marshal(schema())
		if err != nil {
			panic(fmt.Sprintf("tools: marshal schema for %s: %v", name, err))
		}
		return raw
	})
	return &typedTool[P]{spec: spec, schema: schema, run: run}
}

func (t *typedTool[P]) Spec() Spec { return t.spec }

func (t *typedTool[P]) Paths(args json.RawMessage) []string {
	p, err := t.decode(args)
	if err != nil {
		return nil
	}
	if pl, ok := any(p).(PathLister); ok {
		return pl.TouchedPaths()
	}
	return nil
}

// CheckArgs reports the error a call with args would get for its
// arguments, without running it.
func (t *typedTool[P]) CheckArgs(args json.RawMessage) error {
	_, err := t.decode(args)
	return err
}

func (t *typedTool[P]) Run(ctx context.Context, s *Session, args json.RawMessage) (Result, error) {
	p, err := t.decode(args)
	if err != nil {
		return Errorf("invalid arguments for %s: %v", t.spec.Name, err), nil
	}
	return t.run(ctx, s, p)
}

func (t *typedTool[P]) decode(args json.RawMessage) (P, error) {
	var p P
	if fast, ok := any(&p).(fastArgs); ok {
		if obj, ok := fastObject(args); ok && fast.fastDecode(obj) {
			return p, nil
		}
		p = *new(P) // declined: the schema path decides from scratch
	}
	norm, err := validateArgs(t.schema(), args)
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(norm, &p); err != nil {
		return p, err
	}
	return p, nil
}
