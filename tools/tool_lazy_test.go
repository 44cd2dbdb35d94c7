package tools

import (
	"context"
	"strings"
	"testing"
)

// A tool's schema is generated on first use, not when the tool is built:
// a process that builds every tool to call one pays for one schema. A
// params type that cannot be described shows it: building the tool
// works, reading its schema panics.
func TestSchemaGeneratedOnFirstUse(t *testing.T) {
	t.Parallel()
	type undescribable struct {
		C chan int `json:"c"`
	}
	tool := New(Spec{Name: "lazy"}, func(context.Context, *Session, undescribable) (Result, error) { return Text("ok"), nil })
	if tool.Spec().Name != "lazy" || tool.Spec().Schema != nil {
		t.Fatalf("spec %+v", tool.Spec())
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "schema for lazy") {
			t.Errorf("recovered %v, want the schema's panic", r)
		}
	}()
	_ = tool.Spec().SchemaJSON()
	t.Error("an undescribable schema did not panic")
}

// SchemaJSON is the generated schema of a typed tool, the same on every
// call, and the given one of a tool built with a schema of its own.
func TestSchemaJSON(t *testing.T) {
	t.Parallel()
	g := Grep().Spec()
	first := g.SchemaJSON()
	if !strings.Contains(string(first), `"pattern"`) || string(Grep().Spec().SchemaJSON()) != string(first) {
		t.Errorf("grep's schema: %s", first)
	}
	given := Spec{Name: "x", Schema: []byte(`{"type":"object"}`)}
	if string(given.SchemaJSON()) != `{"type":"object"}` {
		t.Errorf("given schema: %s", given.SchemaJSON())
	}
}
