package mcp

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/troupe-ai/troupe/internal/text"
)

// scalars copies the value constraints the model API understands.
func (s *sanitizer) scalars(in, out map[string]any) {
	enumLimit := maxEnum
	if s.terse {
		enumLimit = 16
	}
	var enum []any
	if c, ok := in["const"]; ok && isScalar(c) {
		enum = []any{c}
	}
	if list, ok := in["enum"].([]any); ok && enum == nil {
		for _, v := range list {
			if isScalar(v) && v != nil && len(enum) < enumLimit {
				if str, ok := v.(string); ok {
					v = text.Clip(cleanText(str), 200)
				}
				enum = append(enum, v)
			}
		}
	}
	if len(enum) > 0 {
		out["enum"] = enum
	}
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
		"minLength", "maxLength", "minItems", "maxItems"} {
		if n, ok := in[k].(json.Number); ok {
			out[k] = n
		}
	}
	if p, ok := in["pattern"].(string); ok && len(p) <= 512 && !s.terse {
		out["pattern"] = p
	}
	if d, ok := in["default"]; ok && isScalar(d) && d != nil && !s.terse {
		if str, ok := d.(string); ok {
			d = text.Clip(cleanText(str), 200)
		}
		out["default"] = d
	}
}

// types reads "type": a name or a list of names, "null" left out (every
// optional field may be omitted anyway).
func (s *sanitizer) types(v any) []string {
	var names []string
	switch t := v.(type) {
	case string:
		names = []string{t}
	case []any:
		for _, x := range t {
			if str, ok := x.(string); ok {
				names = append(names, str)
			}
		}
	}
	var out []string
	for _, n := range names {
		if slices.Contains(schemaTypes, n) && !slices.Contains(out, n) && (n != "null" || len(names) == 1) {
			out = append(out, n)
		}
	}
	return out
}

// typeOf is the single type of a schema cut at the depth limit.
func (s *sanitizer) typeOf(in map[string]any) string {
	if ts := s.types(in["type"]); len(ts) == 1 {
		return ts[0]
	}
	if _, ok := in["properties"]; ok {
		return "object"
	}
	return ""
}

// description is the schema's description (its title when it has none),
// cleaned and capped, with the format it asked for, which some APIs
// refuse as a keyword.
func (s *sanitizer) description(in map[string]any, format string) string {
	d, _ := in["description"].(string)
	if d == "" {
		d, _ = in["title"].(string)
	}
	d = text.Clip(strings.TrimSpace(cleanText(d)), s.descLimit())
	if format != "" && len(format) <= 40 {
		f := "(format: " + cleanText(format) + ")"
		if d == "" {
			return f
		}
		return d + " " + f
	}
	return d
}

// resolve finds a local $ref ("#", "#/$defs/x", any JSON pointer into the
// root document).
func (s *sanitizer) resolve(ref string) (any, string, error) {
	if ref == "#" {
		return s.root, "the whole schema", nil
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil, "", fmt.Errorf("%w: $ref %q points outside the schema", ErrSchema, text.Clip(ref, 80))
	}
	cur := s.root
	parts := strings.Split(ref[2:], "/")
	for _, p := range parts {
		p = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[p]
			if !ok {
				return nil, "", fmt.Errorf("%w: $ref %q names nothing in the schema", ErrSchema, text.Clip(ref, 80))
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(c) {
				return nil, "", fmt.Errorf("%w: $ref %q names nothing in the schema", ErrSchema, text.Clip(ref, 80))
			}
			cur = c[i]
		default:
			return nil, "", fmt.Errorf("%w: $ref %q names nothing in the schema", ErrSchema, text.Clip(ref, 80))
		}
	}
	return cur, cleanText(text.Clip(parts[len(parts)-1], 60)), nil
}

// mergeAllOf folds allOf's object parts into the schema: properties and
// required of every part, the first type and description found.
func mergeAllOf(in map[string]any, all []any) map[string]any {
	out := map[string]any{}
	for k, v := range in {
		if k != "allOf" {
			out[k] = v
		}
	}
	props, _ := out["properties"].(map[string]any)
	merged := map[string]any{}
	for k, v := range props {
		merged[k] = v
	}
	req := stringList(out["required"])
	for _, a := range all {
		m, ok := a.(map[string]any)
		if !ok {
			continue
		}
		if ps, ok := m["properties"].(map[string]any); ok {
			for k, v := range ps {
				if _, dup := merged[k]; !dup {
					merged[k] = v
				}
			}
		}
		req = append(req, stringList(m["required"])...)
		for _, k := range []string{"type", "description", "items", "enum", "$ref"} {
			if _, set := out[k]; !set && m[k] != nil {
				out[k] = m[k]
			}
		}
	}
	if len(merged) > 0 {
		out["properties"] = merged
	}
	if len(req) > 0 {
		out["required"] = anyList(req)
	}
	return out
}

func setRequired(out map[string]any, req []string) {
	if len(req) == 0 {
		delete(out, "required")
		return
	}
	slices.Sort(req)
	out["required"] = req
}

func stringList(v any) []string {
	var out []string
	switch l := v.(type) {
	case []any:
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	case []string:
		out = append(out, l...)
	}
	return out
}

func anyList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func isScalar(v any) bool {
	switch v.(type) {
	case nil, string, bool, json.Number, float64:
		return true
	}
	return false
}

func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}
