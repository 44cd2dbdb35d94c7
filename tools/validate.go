package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/troupe-ai/troupe/internal/text"
)

// validateArgs checks raw arguments against schema and returns them
// normalized (numbers and booleans sent as strings coerced, empty arguments
// read as {}). Errors name the field, what was expected and what came, so a
// model can correct its call.
func validateArgs(schema *jsonschema.Schema, raw json.RawMessage) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("arguments hold more than one JSON value")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("arguments must be a JSON object, got %s", describe(v))
	}
	v, err := check(schema, v, "")
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func check(s *jsonschema.Schema, v any, at string) (any, error) {
	typ := s.Type
	if typ == "" && len(s.Types) > 0 {
		if v == nil && slices.Contains(s.Types, "null") {
			return v, nil
		}
		for _, t := range s.Types {
			if t != "null" {
				typ = t
				break
			}
		}
	}
	field := func() string {
		if at == "" {
			return "arguments"
		}
		return fmt.Sprintf("field %q", at)
	}
	switch typ {
	case "object":
		return checkObject(s, v, at, field)
	case "array":
		arr, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: expected array, got %s", field(), describe(v))
		}
		if s.Items != nil {
			for i := range arr {
				nv, err := check(s.Items, arr[i], fmt.Sprintf("%s[%d]", at, i))
				if err != nil {
					return nil, err
				}
				arr[i] = nv
			}
		}
		return arr, nil
	case "string":
		str, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%s: expected string, got %s", field(), describe(v))
		}
		if len(s.Enum) > 0 && !slices.Contains(s.Enum, any(str)) {
			return nil, fmt.Errorf("%s: expected one of %s, got %q", field(), enumList(s.Enum), str)
		}
		return str, nil
	case "boolean":
		switch b := v.(type) {
		case bool:
			return b, nil
		case string:
			if pb, err := strconv.ParseBool(b); err == nil {
				return pb, nil
			}
		}
		return nil, fmt.Errorf("%s: expected boolean, got %s", field(), describe(v))
	case "integer", "number":
		n, ok := toNumber(v)
		if !ok {
			return nil, fmt.Errorf("%s: expected %s, got %s", field(), typ, describe(v))
		}
		if typ == "integer" && n != math.Trunc(n) {
			return nil, fmt.Errorf("%s: expected integer, got %v", field(), n)
		}
		if s.Minimum != nil && n < *s.Minimum {
			return nil, fmt.Errorf("%s: must be at least %v, got %v", field(), *s.Minimum, n)
		}
		if s.Maximum != nil && n > *s.Maximum {
			return nil, fmt.Errorf("%s: must be at most %v, got %v", field(), *s.Maximum, n)
		}
		if typ == "integer" {
			if math.Abs(n) > 1<<53 {
				return nil, fmt.Errorf("%s: integer %v out of range", field(), n)
			}
			return int64(n), nil
		}
		return n, nil
	}
	return v, nil
}

// checkObject checks an object's fields against s: required ones present,
// no unknown ones, each valid; a null optional field is dropped.
func checkObject(s *jsonschema.Schema, v any, at string, field func() string) (any, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: expected object, got %s", field(), describe(v))
	}
	for _, name := range s.Required {
		if _, ok := obj[name]; !ok {
			return nil, fmt.Errorf("field %q is required but missing", join(at, name))
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ps, ok := s.Properties[k]
		if !ok {
			if s.AdditionalProperties != nil && s.AdditionalProperties.Not == nil {
				continue
			}
			return nil, fmt.Errorf("unknown field %q; valid fields: %s", join(at, k), strings.Join(propNames(s), ", "))
		}
		if obj[k] == nil && !slices.Contains(s.Required, k) {
			delete(obj, k) // null for an optional field means "use the default"
			continue
		}
		nv, err := check(ps, obj[k], join(at, k))
		if err != nil {
			return nil, err
		}
		obj[k] = nv
	}
	return obj, nil
}

func toNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("string %q", text.Clip(x, 40))
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case json.Number, float64:
		return fmt.Sprintf("number %v", x)
	case []any:
		return fmt.Sprintf("array of %d", len(x))
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func join(at, name string) string {
	if at == "" {
		return name
	}
	return at + "." + name
}

func propNames(s *jsonschema.Schema) []string {
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func enumList(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, "|")
}
