package tools

import "encoding/json"

// fastDecode takes a plainly valid grep call without grep's schema (see
// fastArgs); Grep's schema edits (the mode enum, the minimums) are the
// bounds it checks.
func (p *GrepParams) fastDecode(obj map[string]json.RawMessage) bool {
	if v, ok := obj["pattern"]; !ok || isNull(v) {
		return false // required: the schema path says so
	}
	return onlyFields(obj, "pattern", "path", "include", "type", "mode", "limit", "offset", "context_lines",
		"before", "after", "case_sensitive", "literal", "multiline", "invert") &&
		fastString(obj, "pattern", &p.Pattern) && fastString(obj, "path", &p.Path) &&
		fastString(obj, "include", &p.Include) && fastString(obj, "type", &p.Type) &&
		fastEnum(obj, "mode", &p.Mode, "files", "content", "count") &&
		fastInt(obj, "limit", 1, &p.Limit) && fastInt(obj, "offset", 0, &p.Offset) &&
		fastInt(obj, "context_lines", 0, &p.ContextLines) && fastInt(obj, "before", 0, &p.Before) &&
		fastInt(obj, "after", 0, &p.After) && fastBoolPtr(obj, "case_sensitive", &p.CaseSensitive) &&
		fastBool(obj, "literal", &p.Literal) && fastBool(obj, "multiline", &p.Multiline) &&
		fastBool(obj, "invert", &p.Invert)
}
