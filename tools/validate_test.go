package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

type vSpan struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

type vParams struct {
	Path  string  `json:"path"`
	Limit int     `json:"limit,omitempty"`
	Mode  string  `json:"mode,omitempty"`
	Deep  bool    `json:"deep,omitempty"`
	Spans []vSpan `json:"spans,omitempty"`
}

func vTool() Tool {
	return New(Spec{Name: "vt", ReadOnly: true}, func(_ context.Context, _ *Session, p vParams) (Result, error) {
		b, _ := json.Marshal(p)
		return Text(string(b)), nil
	}, Enum("mode", "files", "content"), Minimum("limit", 1), Maximum("limit", 10))
}

func TestValidationErrors(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	cases := []struct{ args, want string }{
		{`{}`, `field "path" is required but missing`},
		{`{"path": 3}`, `field "path": expected string, got number 3`},
		{`{"path": "a", "limit": "x"}`, `field "limit": expected integer, got string "x"`},
		{`{"path": "a", "limit": 1.5}`, `field "limit": expected integer, got 1.5`},
		{`{"path": "a", "limit": 0}`, `field "limit": must be at least 1, got 0`},
		{`{"path": "a", "limit": 11}`, `field "limit": must be at most 10, got 11`},
		{`{"path": "a", "mode": "lines"}`, `field "mode": expected one of files|content, got "lines"`},
		{`{"path": "a", "pth": 1}`, `unknown field "pth"; valid fields: deep, limit, mode, path, spans`},
		{`{"path": "a", "spans": [{"start": 1}]}`, `field "spans[0].end" is required but missing`},
		{`{"path": "a", "spans": {"start": 1}}`, `field "spans": expected array, got object`},
		{`{"path": "a", "deep": "maybe"}`, `field "deep": expected boolean, got string "maybe"`},
		{`[1,2]`, `arguments must be a JSON object, got array of 2`},
		{`{"path": `, `arguments are not valid JSON`},
		{`{"path":"a"} {}`, `arguments hold more than one JSON value`},
	}
	for _, c := range cases {
		r, err := vTool().Run(t.Context(), s, json.RawMessage(c.args))
		if err != nil {
			t.Fatalf("%s: Go error %v", c.args, err)
		}
		if !r.IsError || !strings.Contains(r.Text, c.want) {
			t.Errorf("%s: got %q (error=%v), want it to contain %q", c.args, r.Text, r.IsError, c.want)
		}
		if !strings.HasPrefix(r.Text, "invalid arguments for vt: ") {
			t.Errorf("%s: error does not name the tool: %q", c.args, r.Text)
		}
	}
}

func TestValidationCoercesAndDefaults(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	cases := []struct{ args, want string }{
		{`{"path": "a", "limit": "7", "deep": "true"}`, `{"path":"a","limit":7,"deep":true}`},
		{`{"path": "a", "limit": null}`, `{"path":"a"}`},
		{`{"path": "a", "limit": 2e0}`, `{"path":"a","limit":2}`},
	}
	for _, c := range cases {
		r, _ := vTool().Run(t.Context(), s, json.RawMessage(c.args))
		if r.IsError || r.Text != c.want {
			t.Errorf("%s: got %q (error=%v), want %q", c.args, r.Text, r.IsError, c.want)
		}
	}
	// Empty arguments read as {} and so report the missing required field.
	r, _ := vTool().Run(t.Context(), s, nil)
	if !strings.Contains(r.Text, `"path" is required`) {
		t.Errorf("empty args: %q", r.Text)
	}
}

func TestSchemaGeneratedFromStruct(t *testing.T) {
	t.Parallel()
	var sch map[string]any
	if err := json.Unmarshal(vTool().Spec().SchemaJSON(), &sch); err != nil {
		t.Fatal(err)
	}
	if sch["type"] != "object" {
		t.Fatalf("schema type %v", sch["type"])
	}
	req, _ := sch["required"].([]any)
	if len(req) != 1 || req[0] != "path" {
		t.Errorf("required = %v, want [path]", req)
	}
	props := sch["properties"].(map[string]any)
	mode := props["mode"].(map[string]any)
	if len(mode["enum"].([]any)) != 2 {
		t.Errorf("mode enum missing: %v", mode)
	}
}

func FuzzValidateArgs(f *testing.F) {
	for _, s := range []string{`{}`, `{"path":"a","limit":3}`, `{"spans":[{"start":1,"end":2}]}`, `[]`, `"x"`, `{"path":"a","deep":"true","limit":"9"}`, `{"a":{"b":[1,{"c":null}]}}`} {
		f.Add(s)
	}
	tool := vTool()
	ws, err := NewWorkspace(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	s := NewSession("fuzz", ws, Config{})
	f.Fuzz(func(t *testing.T, args string) {
		r, err := tool.Run(context.Background(), s, json.RawMessage(args))
		if err != nil {
			t.Fatalf("Go error for %q: %v", args, err)
		}
		if r.IsError {
			if !strings.HasPrefix(r.Text, "invalid arguments for vt: ") {
				t.Fatalf("error result without the tool's name: %q", r.Text)
			}
			return
		}
		// Whatever was accepted must satisfy the schema's bounds.
		var p vParams
		if err := json.Unmarshal([]byte(r.Text), &p); err != nil {
			t.Fatalf("accepted args re-encode badly: %v", err)
		}
		if p.Limit != 0 && (p.Limit < 1 || p.Limit > 10) {
			t.Fatalf("limit %d accepted outside [1,10] from %q", p.Limit, args)
		}
		if p.Mode != "" && p.Mode != "files" && p.Mode != "content" {
			t.Fatalf("mode %q accepted from %q", p.Mode, args)
		}
	})
}
