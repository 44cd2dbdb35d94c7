package tools

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// slowGrepArgs decodes grep's arguments the schema's way, as every call
// did before the fast path.
func slowGrepArgs(t *testing.T, raw string) (GrepParams, error) {
	t.Helper()
	var p GrepParams
	tool := Grep().(*typedTool[GrepParams])
	norm, err := validateArgs(tool.schema(), json.RawMessage(raw))
	if err != nil {
		return p, err
	}
	return p, json.Unmarshal(norm, &p)
}

// fastGrepArgs decodes them the fast way; false when it declines.
func fastGrepArgs(raw string) (GrepParams, bool) {
	var p GrepParams
	obj, ok := fastObject(json.RawMessage(raw))
	return p, ok && p.fastDecode(obj)
}

// The calls an agent or a user writes take the fast path, with no schema
// built; what they decode to is what the schema path decodes them to.
func TestGrepPlainCallsTakeTheFastPath(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"pattern":"hello"}`,
		` {"pattern": "func main", "path": "cmd", "include": "*.go", "type": "go"} `,
		`{"pattern":"x","mode":"content","context_lines":2,"before":1,"after":3,"limit":50,"offset":100}`,
		`{"pattern":"x","mode":"count","case_sensitive":false,"literal":true,"multiline":false,"invert":true}`,
		`{"pattern":"x","case_sensitive":null,"path":null,"limit":null}`,
		`{"pattern":"caf\u00e9 \"quoted\"","mode":"files"}`,
	} {
		fast, ok := fastGrepArgs(raw)
		if !ok {
			t.Errorf("%s: the fast path declined a plainly valid call", raw)
			continue
		}
		slow, err := slowGrepArgs(t, raw)
		if err != nil || !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s: fast %+v, schema %+v (%v)", raw, fast, slow, err)
		}
	}
}

// Every kind of bad argument still gets the schema path's clear error:
// the fast path declines it and the schema judges.
func TestGrepArgumentErrors(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	cases := []struct{ args, want string }{
		{`{}`, `field "pattern" is required but missing`},
		{`{"pattern": null}`, `field "pattern": expected string, got null`},
		{`{"pattern": 3}`, `field "pattern": expected string, got number 3`},
		{`{"pattern": "x", "path": ["a"]}`, `field "path": expected string, got array of 1`},
		{`{"pattern": "x", "mode": "lines"}`, `field "mode": expected one of files|content|count, got "lines"`},
		{`{"pattern": "x", "limit": 0}`, `field "limit": must be at least 1, got 0`},
		{`{"pattern": "x", "offset": -1}`, `field "offset": must be at least 0, got -1`},
		{`{"pattern": "x", "before": 1.5}`, `field "before": expected integer, got 1.5`},
		{`{"pattern": "x", "after": "many"}`, `field "after": expected integer, got string "many"`},
		{`{"pattern": "x", "context_lines": 1e300}`, `field "context_lines": integer 1e+300 out of range`},
		{`{"pattern": "x", "literal": "maybe"}`, `field "literal": expected boolean, got string "maybe"`},
		{`{"pattern": "x", "case_sensitive": 1}`, `field "case_sensitive": expected boolean, got number 1`},
		{`{"pattern": "x", "glob": "*.go"}`, `unknown field "glob"; valid fields: after, before, case_sensitive`},
		{`["x"]`, `arguments must be a JSON object, got array of 1`},
		{`{"pattern": `, `arguments are not valid JSON`},
		{`{"pattern":"x"} {}`, `arguments hold more than one JSON value`},
	}
	for _, c := range cases {
		if _, ok := fastGrepArgs(c.args); ok {
			t.Errorf("%s: the fast path accepted bad arguments", c.args)
		}
		r := runTool(t, Grep(), s, c.args)
		if !r.IsError || !strings.HasPrefix(r.Text, "invalid arguments for grep: ") || !strings.Contains(r.Text, c.want) {
			t.Errorf("%s: got %q (error=%v), want it to contain %q", c.args, r.Text, r.IsError, c.want)
		}
	}
}

// Coercions the schema path makes (numbers and booleans sent as strings,
// integers written as floats) still work: the fast path leaves them to it.
func TestGrepArgumentsCoerced(t *testing.T) {
	t.Parallel()
	raw := `{"pattern":"x","limit":"7","offset":2e0,"literal":"true","before":3.0}`
	if _, ok := fastGrepArgs(raw); ok {
		t.Errorf("the fast path took a call that needs coercion")
	}
	p, err := (Grep().(*typedTool[GrepParams])).decode(json.RawMessage(raw))
	want := GrepParams{Pattern: "x", Limit: 7, Offset: 2, Literal: true, Before: 3}
	if err != nil || !reflect.DeepEqual(p, want) {
		t.Errorf("decoded %+v (%v), want %+v", p, err, want)
	}
}

// The fast path never accepts what the schema refuses, and decodes what
// it accepts as the schema path does.
func FuzzFastArgsAgreeWithTheSchema(f *testing.F) {
	for _, s := range []string{`{"pattern":"hello"}`, `{"pattern":"x","limit":1}`, `{"pattern":"x","limit":0}`,
		`{"pattern":"x","mode":"count","case_sensitive":true}`, `{"pattern":"x","offset":9007199254740993}`,
		`{"pattern":"x","offset":-0}`, `{"pattern":"a","pattern":"b"}`, `{"pattern":"\ud800"}`, `null`, ``,
		`{"pattern":"x","limit":"3"}`, `{"pattern":"x","invert":false,"extra":1}`, `{"pattern":"x","before":01}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		fast, ok := fastGrepArgs(raw)
		if !ok {
			return
		}
		slow, err := slowGrepArgs(t, raw)
		if err != nil {
			t.Fatalf("%q: the fast path accepted what the schema refuses: %v", raw, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast %+v, schema %+v", raw, fast, slow)
		}
	})
}
