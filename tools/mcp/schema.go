package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Limits of a sanitised input schema. A schema still over MaxSchemaBytes
// after a second, terser pass is refused and its tool left out.
const (
	MaxSchemaBytes = 8 * 1024
	maxDepth       = 8
	maxDescription = 512
	maxProperties  = 100
	maxEnum        = 64
	maxNodes       = 2000
)

// ErrSchema marks a schema the model API cannot be given.
var ErrSchema = errors.New("mcp: unusable input schema")

// schemaTypes are the JSON Schema types a model API knows.
var schemaTypes = []string{"object", "array", "string", "number", "integer", "boolean", "null"}

// SanitizeSchema turns an MCP tool's input schema into one OpenAI-style
// function parameters accept: an object schema at the top (with
// properties), no $schema, $id or other annotations, local $refs inlined
// (a cycle becomes a plain object; a remote $ref is refused), oneOf read as
// anyOf, allOf merged, top-level anyOf/oneOf of objects merged into one
// object, type lists reduced, arrays given items, formats moved into the
// description, required names that are not properties dropped, control
// characters removed from descriptions, and the result bounded in depth and
// size. An error (wrapping ErrSchema) says why the schema cannot be used.
func SanitizeSchema(raw json.RawMessage) (json.RawMessage, error) {
	var root any
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&root); err != nil {
			return nil, fmt.Errorf("%w: not JSON: %v", ErrSchema, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("%w: more than one JSON value", ErrSchema)
		}
	}
	var last error
	for _, terse := range []bool{false, true} {
		s := &sanitizer{root: root, terse: terse}
		out, err := s.top()
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSchema, err)
		}
		if len(b) <= MaxSchemaBytes {
			return b, nil
		}
		last = fmt.Errorf("%w: %d bytes even when simplified, over the %d-byte limit", ErrSchema, len(b), MaxSchemaBytes)
	}
	return nil, last
}

type sanitizer struct {
	root  any
	terse bool     // the second pass: shallower, shorter descriptions, fewer enum values
	refs  []string // $refs being expanded, to cut cycles
	nodes int      // schemas visited: $refs can multiply a small document
}

func (s *sanitizer) depthLimit() int {
	if s.terse {
		return 3
	}
	return maxDepth
}

func (s *sanitizer) descLimit() int {
	if s.terse {
		return 120
	}
	return maxDescription
}

// top sanitises the root, which must describe an object.
func (s *sanitizer) top() (map[string]any, error) {
	var node map[string]any
	switch r := s.root.(type) {
	case nil:
		node = map[string]any{}
	case bool:
		if !r {
			return nil, fmt.Errorf("%w: the schema is false (no arguments are valid)", ErrSchema)
		}
		node = map[string]any{}
	case map[string]any:
		node = r
	default:
		return nil, fmt.Errorf("%w: the schema is %s, not an object", ErrSchema, kindOf(r))
	}
	out, keep, err := s.node(node, 0)
	if err != nil {
		return nil, err
	}
	if !keep {
		return nil, fmt.Errorf("%w: the schema accepts nothing", ErrSchema)
	}
	if alts, ok := out["anyOf"].([]any); ok {
		delete(out, "anyOf")
		out = mergeAlternatives(out, alts)
	}
	switch t := out["type"].(type) {
	case nil:
		out["type"] = "object"
	case string:
		if t != "object" {
			return nil, fmt.Errorf("%w: the arguments are described as %s; MCP tool arguments are an object", ErrSchema, t)
		}
	}
	if _, ok := out["properties"]; !ok {
		out["properties"] = map[string]any{}
	}
	for _, k := range []string{"items", "enum", "minItems", "maxItems", "minLength", "maxLength", "pattern",
		"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "default"} {
		delete(out, k) // not an object's keywords; some APIs reject them at the top
	}
	return out, nil
}

// mergeAlternatives folds top-level alternatives into one object schema:
// every object alternative's properties, required only where every
// alternative requires it. The model API wants a plain object at the top.
func mergeAlternatives(out map[string]any, alts []any) map[string]any {
	props, _ := out["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	counts := map[string]int{}
	objects := 0
	for _, a := range alts {
		m, ok := a.(map[string]any)
		if !ok || (m["type"] != nil && m["type"] != "object") {
			continue
		}
		objects++
		if ps, ok := m["properties"].(map[string]any); ok {
			for k, v := range ps {
				if _, dup := props[k]; !dup && len(props) < maxProperties {
					props[k] = v
				}
			}
		}
		for _, r := range stringList(m["required"]) {
			counts[r]++
		}
	}
	req := stringList(out["required"])
	for r, n := range counts {
		if n == objects && !slices.Contains(req, r) {
			req = append(req, r)
		}
	}
	out["properties"] = props
	setRequired(out, req)
	if objects > 1 {
		note := fmt.Sprintf("Accepts %d alternative sets of fields; give the fields of one.", objects)
		if d, _ := out["description"].(string); d != "" {
			note = d + " " + note
		}
		out["description"] = note
	}
	return out
}

// node sanitises one schema; keep is false for a schema that accepts
// nothing (false), which a parent drops.
func (s *sanitizer) node(in map[string]any, depth int) (map[string]any, bool, error) {
	s.nodes++
	if all, ok := in["allOf"].([]any); ok {
		in = mergeAllOf(in, all)
	}
	if ref, ok := in["$ref"].(string); ok && s.nodes <= maxNodes {
		target, name, err := s.resolve(ref)
		if err != nil {
			return nil, false, err
		}
		if slices.Contains(s.refs, ref) || len(s.refs) > maxDepth {
			out := map[string]any{"type": "object"}
			if d := s.description(in, ""); d != "" {
				out["description"] = d
			} else {
				out["description"] = "Same shape as " + name + " (recursive)."
			}
			return out, true, nil
		}
		s.refs = append(s.refs, ref)
		defer func() { s.refs = s.refs[:len(s.refs)-1] }()
		merged := map[string]any{}
		if t, ok := target.(map[string]any); ok {
			for k, v := range t {
				merged[k] = v
			}
		} else if b, ok := target.(bool); ok && !b {
			return nil, false, nil
		}
		for k, v := range in {
			if k != "$ref" {
				merged[k] = v // siblings of $ref (a description) refine the target
			}
		}
		return s.node(merged, depth)
	}
	out := map[string]any{}
	format, _ := in["format"].(string)
	if d := s.description(in, format); d != "" {
		out["description"] = d
	}
	if depth >= s.depthLimit() || s.nodes > maxNodes {
		if t := s.typeOf(in); t != "" {
			out["type"] = t
		}
		return out, true, nil
	}
	types := s.types(in["type"])
	switch len(types) {
	case 0:
	case 1:
		out["type"] = types[0]
	default:
		var alts []any
		for _, t := range types {
			alts = append(alts, map[string]any{"type": t})
		}
		out["anyOf"] = alts
	}
	if err := s.children(in, out, depth); err != nil {
		return nil, false, err
	}
	s.scalars(in, out)
	if out["type"] == nil && out["anyOf"] == nil {
		switch {
		case out["properties"] != nil:
			out["type"] = "object"
		case out["items"] != nil:
			out["type"] = "array"
		}
	}
	if out["type"] == "array" && out["items"] == nil {
		out["items"] = map[string]any{}
	}
	return out, true, nil
}

// children sanitises the keywords that hold schemas.
func (s *sanitizer) children(in, out map[string]any, depth int) error {
	if ps, ok := in["properties"].(map[string]any); ok {
		props := map[string]any{}
		names := make([]string, 0, len(ps))
		for k := range ps {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			if len(props) == maxProperties {
				break
			}
			child, keep, err := s.sub(ps[k], depth+1)
			if err != nil {
				return err
			}
			if keep {
				props[k] = child
			}
		}
		out["properties"] = props
		var req []string
		for _, r := range stringList(in["required"]) {
			if _, ok := props[r]; ok && !slices.Contains(req, r) {
				req = append(req, r)
			}
		}
		setRequired(out, req)
	}
	switch it := in["items"].(type) {
	case map[string]any, bool:
		child, keep, err := s.sub(it, depth+1)
		if err != nil {
			return err
		}
		if keep {
			out["items"] = child
		}
	case []any: // a tuple (draft 4-2019): the first position describes them best
		if len(it) > 0 {
			child, keep, err := s.sub(it[0], depth+1)
			if err != nil {
				return err
			}
			if keep {
				out["items"] = child
			}
		}
	}
	switch ap := in["additionalProperties"].(type) {
	case bool:
		out["additionalProperties"] = ap
	case map[string]any:
		child, keep, err := s.sub(ap, depth+1)
		if err != nil {
			return err
		}
		if keep {
			out["additionalProperties"] = child
		} else {
			out["additionalProperties"] = false
		}
	}
	var alts []any
	for _, key := range []string{"anyOf", "oneOf"} {
		list, _ := in[key].([]any)
		for _, a := range list {
			child, keep, err := s.sub(a, depth+1)
			if err != nil {
				return err
			}
			if keep && child["type"] != "null" {
				alts = append(alts, child)
			}
		}
	}
	switch {
	case len(alts) == 1 && out["type"] == nil && out["anyOf"] == nil:
		for k, v := range alts[0].(map[string]any) {
			if _, set := out[k]; !set {
				out[k] = v
			}
		}
	case len(alts) > 0 && out["anyOf"] == nil:
		out["anyOf"] = alts
	}
	return nil
}

// sub sanitises a child schema, which may be a boolean.
func (s *sanitizer) sub(v any, depth int) (map[string]any, bool, error) {
	switch c := v.(type) {
	case bool:
		return map[string]any{}, c, nil
	case map[string]any:
		return s.node(c, depth)
	}
	return map[string]any{}, true, nil // not a schema: read as "anything"
}
