package messages

import "encoding/json"

// ToolSpec is the provider-neutral description of one tool as a model sees
// it: the name, the description and the JSON Schema of its arguments.
// llm converts it to the provider's function-tool shape.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ToolCall is one call of a tool requested by a model in one turn.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}
