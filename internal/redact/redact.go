// Package redact removes the exact values of configured secrets (the model
// API key, NATS tokens, passwords and credentials) from text before it
// leaves the process's memory: tool results (and so model requests,
// checkpoints and spill files), events and logs.
//
// A Redactor is built once per process from the secret values; it is
// immutable and safe for concurrent use, and a nil *Redactor redacts
// nothing. Values shorter than MinLen are ignored: a short "key" such as
// "none" or "ollama" (what local servers accept) would otherwise blank out
// ordinary words. Every value is searched in its plain form and in the
// form JSON gives it inside a string, so encoded events and checkpoints
// are covered as well as plain text.
package redact

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
)

// Mask replaces every occurrence of a secret.
const Mask = "[redacted]"

// MinLen is the shortest value redacted.
const MinLen = 8

// Redactor replaces known secret values with Mask.
type Redactor struct {
	needles  []string // every form searched, longest first
	replacer *strings.Replacer
}

// New returns a Redactor for the given values, ignoring duplicates, those
// shorter than MinLen (after trimming spaces) and empty ones. It returns
// nil when no value qualifies; a nil Redactor redacts nothing.
func New(values ...string) *Redactor {
	seen := map[string]bool{}
	var needles []string
	add := func(s string) {
		if len(s) >= MinLen && !seen[s] {
			seen[s] = true
			needles = append(needles, s)
		}
	}
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) < MinLen {
			continue
		}
		add(v)
		add(jsonForm(v))
	}
	if len(needles) == 0 {
		return nil
	}
	// Longest first, so that a secret containing another is masked whole.
	slices.SortFunc(needles, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(needles))
	for _, n := range needles {
		pairs = append(pairs, n, Mask)
	}
	return &Redactor{needles: needles, replacer: strings.NewReplacer(pairs...)}
}

// jsonForm is s as it appears inside a JSON string written by
// encoding/json (which escapes per character, so a value's escaped form is
// found inside the escaped form of any text holding it).
func jsonForm(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// Empty reports whether r redacts nothing.
func (r *Redactor) Empty() bool { return r == nil || len(r.needles) == 0 }

// String returns s with every secret replaced by Mask.
func (r *Redactor) String(s string) string {
	if r.Empty() || !r.inString(s) {
		return s
	}
	return r.replacer.Replace(s)
}

func (r *Redactor) inString(s string) bool {
	for _, n := range r.needles {
		if strings.Contains(s, n) {
			return true
		}
	}
	return false
}

// Contains reports whether b holds a secret, plain or JSON-escaped.
func (r *Redactor) Contains(b []byte) bool {
	if r.Empty() {
		return false
	}
	for _, n := range r.needles {
		if bytes.Contains(b, []byte(n)) {
			return true
		}
	}
	return false
}

// Bytes returns b with every secret replaced by Mask; b itself is not
// changed, and is returned as it is when it holds no secret.
func (r *Redactor) Bytes(b []byte) []byte {
	if !r.Contains(b) {
		return b
	}
	return []byte(r.replacer.Replace(string(b)))
}

// JSON returns a JSON document written by encoding/json with every secret
// inside its strings (and object keys) replaced by Mask, and still valid:
// a byte-level replacement could cut an escape sequence in two. Numbers
// keep their exact text. A document holding no secret is returned as it
// is; one that is not valid JSON is redacted as plain bytes. (Secrets are
// looked for as encoding/json escapes them; JSON from another encoder that
// escapes differently, e.g. "\u0041" for "A", is not covered.)
func (r *Redactor) JSON(data []byte) []byte {
	if !r.Contains(data) {
		return data
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return r.Bytes(data)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r.walk(v)); err != nil {
		return r.Bytes(data)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func (r *Redactor) walk(v any) any {
	switch x := v.(type) {
	case string:
		return r.String(x)
	case []any:
		for i := range x {
			x[i] = r.walk(x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[r.String(k)] = r.walk(e)
		}
		return out
	}
	return v
}

// Writer returns a writer that redacts what it passes on to w. Each Write
// is redacted on its own, which suits loggers (zerolog writes one whole
// line per call); a secret split across two writes is not found. With a
// nil or empty r it returns w itself.
func (r *Redactor) Writer(w io.Writer) io.Writer {
	if r.Empty() {
		return w
	}
	return &writer{r: r, w: w}
}

type writer struct {
	r *Redactor
	w io.Writer
}

// Write redacts p and writes it; it reports len(p) on success, as the
// caller's bytes were all consumed.
func (w *writer) Write(p []byte) (int, error) {
	if _, err := w.w.Write(w.r.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Error returns err with every secret replaced in its text; the chain (and
// so errors.Is and errors.As) is kept. A nil err stays nil.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := r.String(msg); clean != msg {
		return &redactedError{msg: clean, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
