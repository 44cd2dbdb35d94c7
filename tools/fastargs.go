package tools

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// fastArgs is implemented by the params of the tools a CLI or an agent
// calls most (grep): a hand-written decoder that takes the common, plainly
// valid call without the tool's JSON Schema (whose generation by
// reflection is most of a first call's cost). It accepts only arguments
// the schema accepts, decoding them to what the schema path would, and
// declines everything else (a wrong type, a bound broken, an unknown
// field, a coercion): the schema path then decides, so errors stay its
// errors. FuzzFastArgsAgreeWithTheSchema holds the two together.
type fastArgs interface {
	fastDecode(obj map[string]json.RawMessage) bool
}

// fastObject reads raw as one JSON object of raw fields, as validateArgs
// reads arguments (empty or null is {}); false when it is anything else.
func fastObject(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]json.RawMessage{}, true
	}
	if raw[0] != '{' {
		return nil, false
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, false
	}
	return obj, true
}

// The field readers: each takes a field that is absent or null (the
// default) or of exactly the schema's type, and reports false for
// anything the schema path should judge.

func fastString(obj map[string]json.RawMessage, name string, dst *string) bool {
	v, ok := obj[name]
	if !ok || isNull(v) {
		return true
	}
	if len(v) == 0 || v[0] != '"' {
		return false
	}
	return json.Unmarshal(v, dst) == nil
}

func fastBool(obj map[string]json.RawMessage, name string, dst *bool) bool {
	v, ok := obj[name]
	switch {
	case !ok || isNull(v):
		return true
	case string(v) == "true":
		*dst = true
		return true
	case string(v) == "false":
		*dst = false
		return true
	}
	return false
}

// fastBoolPtr is fastBool for an optional boolean: absent or null is nil.
func fastBoolPtr(obj map[string]json.RawMessage, name string, dst **bool) bool {
	v, ok := obj[name]
	if !ok || isNull(v) {
		return true
	}
	var b bool
	if !fastBool(obj, name, &b) {
		return false
	}
	*dst = &b
	return true
}

// fastInt takes a JSON integer written without fraction or exponent, at
// least minimum and within the schema path's ±2^53.
func fastInt(obj map[string]json.RawMessage, name string, minimum int64, dst *int) bool {
	v, ok := obj[name]
	if !ok || isNull(v) {
		return true
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n < minimum || n > 1<<53 || n < -(1<<53) || int64(int(n)) != n {
		return false
	}
	*dst = int(n)
	return true
}

// fastEnum is fastString for a field whose value is one of values.
func fastEnum(obj map[string]json.RawMessage, name string, dst *string, values ...string) bool {
	var s string
	if !fastString(obj, name, &s) {
		return false
	}
	if _, ok := obj[name]; !ok || isNull(obj[name]) {
		return true
	}
	for _, v := range values {
		if s == v {
			*dst = s
			return true
		}
	}
	return false
}

// onlyFields reports whether obj names no field outside names.
func onlyFields(obj map[string]json.RawMessage, names ...string) bool {
	n := 0
	for _, name := range names {
		if _, ok := obj[name]; ok {
			n++
		}
	}
	return n == len(obj)
}

func isNull(v json.RawMessage) bool { return string(v) == "null" }
