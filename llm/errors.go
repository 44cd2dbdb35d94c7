package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Sentinel errors of the package.
var (
	// ErrStreamIncomplete reports a stream that ended before its [DONE]
	// event (a cut connection or a server that gave up). It is transient.
	ErrStreamIncomplete = errors.New("llm: stream ended before [DONE]")
	// ErrStreamStalled reports a stream that went quiet for longer than
	// Config.StreamIdleTimeout. It is transient.
	ErrStreamStalled = errors.New("llm: stream stalled")
	// ErrMalformedChunk reports a stream event that is not a valid chunk.
	// It is transient.
	ErrMalformedChunk = errors.New("llm: malformed stream chunk")
	// ErrEmptyResponse reports a response without any choice.
	ErrEmptyResponse = errors.New("llm: response has no choices")
	// ErrBadRequest reports a Request that cannot be sent (bad tool schema,
	// no model); it is never retried.
	ErrBadRequest = errors.New("llm: bad request")
	// ErrNotEventStream reports a server that answered a streaming request
	// with something other than an event stream (it does not stream); it is
	// not retried: turn streaming off for it.
	ErrNotEventStream = errors.New("llm: server does not stream")
)

// APIError is an error answer of the model API (an HTTP status >= 400).
type APIError struct {
	Status  int    // HTTP status
	Message string // the provider's message
	Code    string // the provider's error code, if any
	Type    string // the provider's error type, if any
	// Retryable reports a transient failure (429, 5xx) that was or would
	// be retried.
	Retryable bool
	// RetryAfter is the delay the provider asked for, if any.
	RetryAfter time.Duration
}

// Error renders the status and the provider's message, e.g.
// "model API: 401 Unauthorized: invalid api key (code invalid_api_key)".
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("model API: ")
	fmt.Fprintf(&b, "%d", e.Status)
	if t := http.StatusText(e.Status); t != "" {
		b.WriteString(" " + t)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Code != "" {
		b.WriteString(" (code " + e.Code + ")")
	}
	return b.String()
}

// retryableStatus reports the statuses we retry: 408, 409 (OpenAI's lock
// contention), 429 and 5xx.
func retryableStatus(status int) bool {
	switch {
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status == http.StatusTooManyRequests:
		return true
	default:
		return status >= 500 && status <= 599
	}
}

// transientError marks a failure that is worth another attempt (network,
// cut stream, malformed chunk, attempt timeout).
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

func transient(err error) error { return &transientError{err: err} }

// isTransient reports whether err is worth another attempt, and the delay
// the provider asked for.
func isTransient(err error) (bool, time.Duration) {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.Retryable, apiErr.RetryAfter
	}
	var te *transientError
	return errors.As(err, &te), 0
}
