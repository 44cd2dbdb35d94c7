package messages

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// WriteEventSchema writes the Markdown reference of the envelope and of
// every event type in the catalog: docs/events.md is its output.
func WriteEventSchema(w io.Writer, intro string) error {
	var b strings.Builder
	b.WriteString(intro)
	b.WriteString("\n## The envelope (version 1)\n\n")
	writeFields(&b, reflect.TypeOf(Event{}), envelopeDocs)
	b.WriteString("\n## Event types\n\n| type | payload | what happened |\n|---|---|---|\n")
	for _, s := range Catalog() {
		fmt.Fprintf(&b, "| [`%s`](#%s) | `%s` | %s |\n", s.Type, anchor(s.Type), reflect.TypeOf(s.Example).Name(), s.Doc)
	}
	for _, s := range Catalog() {
		t := reflect.TypeOf(s.Example)
		fmt.Fprintf(&b, "\n### %s\n\n%s Payload `messages.%s`:\n\n", s.Type, s.Doc, t.Name())
		writeFields(&b, t, nil)
		ex, err := json.MarshalIndent(s.Example, "", "  ")
		if err != nil {
			return fmt.Errorf("example of %s: %w", s.Type, err)
		}
		fmt.Fprintf(&b, "\nExample `data`:\n\n```json\n%s\n```\n", ex)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// envelopeDocs describes the envelope's fields (the Event type carries no
// doc tags: its comments say the same for Go readers).
var envelopeDocs = map[string]string{
	"v":       "envelope version, 1",
	"id":      "a UUID, unique per event",
	"time":    "when it happened, RFC 3339 with nanoseconds, UTC",
	"run":     "the run's ID (\"nodes\" for a node's own joined and left events)",
	"agent":   "the agent's ID (\"root\", \"explore-1a2b3c4d\", \"run\" for run events, a node's ID for node events in run \"nodes\" and a node's own events in a run, \"nodes\" for a run's events about its nodes)",
	"parent":  "the parent agent's ID",
	"kind":    "the agent's kind (root, explore, planner, worker, a custom kind; run; node)",
	"node":    "the node that runs the agent, for remote agents; the node itself, for node events",
	"attempt": "a remote task's delivery attempt, from 1 (absent for local agents)",
	"seq":     "1, 2, 3... per agent (and attempt) without gaps: a gap means a missed event",
	"type":    "the event type below; the last tokens of the subject",
	"data":    "the type's payload",
}

func writeFields(b *strings.Builder, t reflect.Type, docs map[string]string) {
	b.WriteString("| field | type | meaning |\n|---|---|---|\n")
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		doc := f.Tag.Get("doc")
		if docs != nil {
			doc = docs[name]
		}
		if strings.Contains(opts, "omitempty") {
			doc += " (omitted when empty)"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", name, jsonType(f.Type), strings.TrimSpace(doc))
	}
}

func jsonType(t reflect.Type) string {
	switch {
	case t == reflect.TypeOf(json.RawMessage{}):
		return "JSON"
	case t.String() == "time.Time":
		return "string (time)"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64, reflect.Uint32, reflect.Uint:
		return "integer"
	case reflect.Float64, reflect.Float32:
		return "number"
	case reflect.Slice:
		return "array of " + jsonType(t.Elem())
	case reflect.Map:
		return "object"
	case reflect.Pointer:
		return jsonType(t.Elem())
	case reflect.Struct:
		return "object (" + t.Name() + ")"
	}
	return t.Kind().String()
}

func anchor(typ string) string { return strings.ReplaceAll(typ, ".", "") }
