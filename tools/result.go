package tools

import "fmt"

// Result is what one tool call gives back: the text the model sees and
// structured metadata for events and UIs. A tool failure the model should
// read (bad arguments, a missing file, a non-zero exit) is a Result with
// IsError set and a nil Go error; a Go error means the harness itself broke.
type Result struct {
	Text      string         `json:"text"`
	IsError   bool           `json:"is_error"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	Truncated bool           `json:"truncated"`
	SpillPath string         `json:"spill_path,omitempty"`
	Cached    bool           `json:"cached,omitempty"`
}

// Errorf returns an error result with a formatted message.
func Errorf(format string, args ...any) Result {
	return Result{Text: fmt.Sprintf(format, args...), IsError: true}
}

// Text returns a successful result with the given text.
func Text(s string) Result { return Result{Text: s} }

// WithMeta returns r with key set in its metadata.
func (r Result) WithMeta(key string, v any) Result {
	if r.Metadata == nil {
		r.Metadata = map[string]any{}
	}
	r.Metadata[key] = v
	return r
}
