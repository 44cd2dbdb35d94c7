package tools

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
)

// ValidateArgs checks raw arguments against schema as the typed tools'
// arguments are checked, for tools whose schema comes from elsewhere (MCP
// servers): numbers and booleans sent as strings are coerced, empty
// arguments read as {}, and an error names the field, what was expected
// and what came. An object schema without additionalProperties refuses
// unknown fields; set it to an empty schema to allow them.
func ValidateArgs(schema *jsonschema.Schema, raw json.RawMessage) (json.RawMessage, error) {
	return validateArgs(schema, raw)
}
