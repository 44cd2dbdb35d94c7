package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

func TestSanitizeSchema(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty is an object without fields", ``, `{"properties":{},"type":"object"}`},
		{"true is an object without fields", `true`, `{"properties":{},"type":"object"}`},
		{"missing type at the top", `{"properties":{"a":{"type":"string"}}}`,
			`{"properties":{"a":{"type":"string"}},"type":"object"}`},
		{"$schema, $id, examples and titles go", `{"$schema":"http://json-schema.org/draft-07/schema#","$id":"x","type":"object","title":"T","examples":[1],"properties":{"a":{"type":"string","title":"The A","$comment":"c"}}}`,
			`{"description":"T","properties":{"a":{"description":"The A","type":"string"}},"type":"object"}`},
		{"local $ref inlined, siblings refine it", `{"type":"object","$defs":{"p":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}},"properties":{"at":{"$ref":"#/$defs/p","description":"where"}}}`,
			`{"properties":{"at":{"description":"where","properties":{"x":{"type":"integer"}},"required":["x"],"type":"object"}},"type":"object"}`},
		{"definitions (draft 7) inlined", `{"type":"object","definitions":{"s":{"type":"string","enum":["a","b"]}},"properties":{"k":{"$ref":"#/definitions/s"}}}`,
			`{"properties":{"k":{"enum":["a","b"],"type":"string"}},"type":"object"}`},
		{"recursive $ref becomes a plain object", `{"type":"object","$defs":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/n"}}}}},"properties":{"root":{"$ref":"#/$defs/n"}}}`,
			`{"properties":{"root":{"properties":{"kids":{"items":{"description":"Same shape as n (recursive).","type":"object"},"type":"array"}},"type":"object"}},"type":"object"}`},
		{"top-level anyOf of objects merged", `{"anyOf":[{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]},{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}]}`,
			`{"description":"Accepts 2 alternative sets of fields; give the fields of one.","properties":{"id":{"type":"integer"},"name":{"type":"string"}},"type":"object"}`},
		{"top-level oneOf with a shared required field", `{"type":"object","oneOf":[{"properties":{"q":{"type":"string"},"a":{"type":"string"}},"required":["q","a"]},{"properties":{"q":{"type":"string"}},"required":["q"]}]}`,
			`{"description":"Accepts 2 alternative sets of fields; give the fields of one.","properties":{"a":{"type":"string"},"q":{"type":"string"}},"required":["q"],"type":"object"}`},
		{"nested oneOf becomes anyOf", `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`,
			`{"properties":{"v":{"anyOf":[{"type":"string"},{"type":"integer"}]}},"type":"object"}`},
		{"nullable by anyOf collapses", `{"type":"object","properties":{"v":{"anyOf":[{"type":"string","maxLength":5},{"type":"null"}]}}}`,
			`{"properties":{"v":{"maxLength":5,"type":"string"}},"type":"object"}`},
		{"type list without null", `{"type":"object","properties":{"v":{"type":["string","null"]},"w":{"type":["string","integer"]}}}`,
			`{"properties":{"v":{"type":"string"},"w":{"anyOf":[{"type":"string"},{"type":"integer"}]}},"type":"object"}`},
		{"allOf merged", `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"boolean"}}}]}`,
			`{"properties":{"a":{"type":"string"},"b":{"type":"boolean"}},"required":["a"],"type":"object"}`},
		{"array gets items", `{"type":"object","properties":{"l":{"type":"array"},"t":{"type":"array","items":[{"type":"string"},{"type":"integer"}]}}}`,
			`{"properties":{"l":{"items":{},"type":"array"},"t":{"items":{"type":"string"},"type":"array"}},"type":"object"}`},
		{"format moves into the description", `{"type":"object","properties":{"u":{"type":"string","format":"uri","description":"a link"},"d":{"type":"string","format":"date-time"}}}`,
			`{"properties":{"d":{"description":"(format: date-time)","type":"string"},"u":{"description":"a link (format: uri)","type":"string"}},"type":"object"}`},
		{"required names that are not properties dropped", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","ghost","a"]}`,
			`{"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"}`},
		{"false property dropped, true kept", `{"type":"object","properties":{"no":false,"any":true},"required":["no"]}`,
			`{"properties":{"any":{}},"type":"object"}`},
		{"const becomes enum; bounds kept", `{"type":"object","properties":{"k":{"const":"x"},"n":{"type":"integer","minimum":1,"maximum":9,"exclusiveMinimum":true,"default":3}}}`,
			`{"properties":{"k":{"enum":["x"]},"n":{"default":3,"maximum":9,"minimum":1,"type":"integer"}},"type":"object"}`},
		{"control characters leave descriptions", "{\"type\":\"object\",\"description\":\"a\\u001b[31m red\\u0007 \\u202eb\"}",
			`{"description":"a red b","properties":{},"type":"object"}`},
		{"unknown keywords go", `{"type":"object","patternProperties":{".*":{"type":"string"}},"if":{},"then":{},"dependencies":{},"properties":{"a":{"type":"string","contentMediaType":"x","readOnly":true,"nullable":true}}}`,
			`{"properties":{"a":{"type":"string"}},"type":"object"}`},
		{"additionalProperties kept", `{"type":"object","additionalProperties":false,"properties":{"m":{"type":"object","additionalProperties":{"type":"integer","format":"int64"}}}}`,
			`{"additionalProperties":false,"properties":{"m":{"additionalProperties":{"description":"(format: int64)","type":"integer"},"type":"object"}},"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SanitizeSchema(json.RawMessage(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("\ngot  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestSanitizeSchemaRefuses(t *testing.T) {
	huge := map[string]any{}
	for i := range 400 {
		huge[fmt.Sprintf("f%d", i)] = map[string]any{"type": "string", "description": strings.Repeat("x", 300)}
	}
	giant, _ := json.Marshal(map[string]any{"type": "object", "properties": huge})
	tests := []struct{ name, in, want string }{
		{"not JSON", `{"type":`, "not JSON"},
		{"two values", `{} {}`, "more than one JSON value"},
		{"a string", `"object"`, "the schema is a string, not an object"},
		{"false", `false`, "no arguments are valid"},
		{"non-object arguments", `{"type":"string"}`, "described as string"},
		{"remote $ref", `{"type":"object","properties":{"x":{"$ref":"https://example.com/s.json"}}}`, "points outside the schema"},
		{"dangling $ref", `{"type":"object","properties":{"x":{"$ref":"#/$defs/nope"}}}`, "names nothing"},
		{"giant", string(giant), "over the 8192-byte limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := SanitizeSchema(json.RawMessage(tt.in))
			if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
}

// A large schema that fits once simplified is simplified, not refused.
func TestSanitizeSchemaSimplifiesDeepSchemas(t *testing.T) {
	node := `{"type":"string","description":"` + strings.Repeat("d", 400) + `"}`
	for range 12 {
		node = `{"type":"object","description":"` + strings.Repeat("d", 400) + `","properties":{"a":` + node + `,"b":` + node + `}}`
		if len(node) > 200_000 {
			break
		}
	}
	got, err := SanitizeSchema(json.RawMessage(node))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > MaxSchemaBytes || !strings.Contains(string(got), `"type":"object"`) {
		t.Errorf("%d bytes: %.300s", len(got), got)
	}
}

// An exponential $ref fan-out is bounded.
func TestSanitizeSchemaRefFanOut(t *testing.T) {
	defs := map[string]any{"d0": map[string]any{"type": "string"}}
	for i := 1; i < 30; i++ {
		props := map[string]any{}
		for j := range 4 {
			props[fmt.Sprintf("p%d", j)] = map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", i-1)}
		}
		defs[fmt.Sprintf("d%d", i)] = map[string]any{"type": "object", "properties": props}
	}
	in, _ := json.Marshal(map[string]any{"type": "object", "$defs": defs, "properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/d29"}}})
	got, err := SanitizeSchema(in)
	if err == nil && len(got) > MaxSchemaBytes {
		t.Errorf("%d bytes", len(got))
	}
}

// checkSanitized asserts what every sanitised schema promises.
func checkSanitized(t *testing.T, out []byte) {
	t.Helper()
	if len(out) > MaxSchemaBytes {
		t.Fatalf("%d bytes, over the limit", len(out))
	}
	var top map[string]any
	if err := json.Unmarshal(out, &top); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, out)
	}
	if top["type"] != "object" {
		t.Fatalf("top type %v: %s", top["type"], out)
	}
	if _, ok := top["properties"].(map[string]any); !ok {
		t.Fatalf("no properties: %s", out)
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf", "enum", "not"} {
		if _, ok := top[k]; ok {
			t.Fatalf("%s at the top: %s", k, out)
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch n := v.(type) {
		case map[string]any:
			for k, c := range n {
				switch k {
				case "$ref", "$schema", "$defs", "definitions", "oneOf", "allOf", "format", "$id":
					t.Fatalf("keyword %s left: %s", k, out)
				}
				if k == "properties" {
					for _, p := range c.(map[string]any) {
						walk(p)
					}
					continue
				}
				walk(c)
			}
			if n["type"] == "array" && n["items"] == nil {
				t.Fatalf("array without items: %s", out)
			}
		case []any:
			for _, c := range n {
				walk(c)
			}
		}
	}
	walk(top)
	var s jsonschema.Schema
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("jsonschema cannot read it: %v: %s", err, out)
	}
}

func FuzzSanitizeSchema(f *testing.F) {
	for _, seed := range []string{``, `true`, `{"type":"object"}`, `{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}}]}`,
		`{"type":"object","$defs":{"n":{"properties":{"k":{"$ref":"#/$defs/n"}}}},"properties":{"r":{"$ref":"#"}}}`,
		`{"properties":{"a":{"type":["array","null"],"items":[true,false]},"b":{"allOf":[{"$ref":"#/properties/a"}]}}}`,
		`{"type":"object","properties":{"x":{"enum":[1,"a",null,{"o":1}],"const":[1]}}}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := SanitizeSchema(in)
		if err != nil {
			if !errors.Is(err, ErrSchema) {
				t.Fatalf("error not ErrSchema: %v", err)
			}
			return
		}
		checkSanitized(t, out)
		again, err := SanitizeSchema(out)
		if err != nil {
			t.Fatalf("a sanitised schema is refused: %v: %s", err, out)
		}
		checkSanitized(t, again)
	})
}

func TestToolName(t *testing.T) {
	long := strings.Repeat("x", 80)
	tests := []struct{ server, tool, want string }{
		{"gh", "create_issue", "mcp__gh__create_issue"},
		{"everything", "get-sum", "mcp__everything__get-sum"},
		{"t", "odd.name v2", "mcp__t__odd_name_v2_"},
		{"t", long, "mcp__t__" + strings.Repeat("x", 47) + "_"},
	}
	for _, tt := range tests {
		got := ToolName(tt.server, tt.tool)
		if !strings.HasPrefix(got, tt.want) || len(got) > 64 {
			t.Errorf("ToolName(%q, %q) = %q, want prefix %q and at most 64 characters", tt.server, tt.tool, got, tt.want)
		}
		if srv, ok := SplitToolName(got); !ok || srv != tt.server {
			t.Errorf("SplitToolName(%q) = %q, %v", got, srv, ok)
		}
	}
	if ToolName("t", "a.b") == ToolName("t", "a_b") || ToolName("t", long) == ToolName("t", long+"y") {
		t.Error("distinct tools share a name")
	}
	for _, bad := range []string{"", "a__b", "a b", "_a", "a_", strings.Repeat("a", 33), "a.b"} {
		if CheckServerName(bad) == nil {
			t.Errorf("server name %q accepted", bad)
		}
	}
	for _, good := range []string{"gh", "everything", "my-server", "a_b", "x1"} {
		if err := CheckServerName(good); err != nil {
			t.Errorf("server name %q: %v", good, err)
		}
	}
}
