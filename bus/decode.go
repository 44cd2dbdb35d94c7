package bus

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/troupe-ai/troupe/messages"
)

// MaxEventBytes is the largest event accepted from the wire by default.
const MaxEventBytes = 1 << 20

// Reasons an event from the wire is rejected, as Rejected counts them.
const (
	RejectOversize = "oversize"
	RejectJSON     = "bad_json"
	RejectVersion  = "version"
	RejectInvalid  = "invalid"
	RejectSubject  = "subject_mismatch"
)

// DecodeError is why an event from the wire was rejected.
type DecodeError struct {
	Reason string // one of the Reject* constants
	Err    error
}

func (e *DecodeError) Error() string { return fmt.Sprintf("event rejected (%s): %v", e.Reason, e.Err) }
func (e *DecodeError) Unwrap() error { return e.Err }

// DecodeEvent reads one event received on subject: it must be at most
// maxBytes (0: MaxEventBytes), valid JSON, a valid envelope of the version
// this build reads, and published on the subject its envelope names under
// prefix.
func DecodeEvent(prefix, subject string, data []byte, maxBytes int) (messages.Event, error) {
	if maxBytes <= 0 {
		maxBytes = MaxEventBytes
	}
	var ev messages.Event
	if len(data) > maxBytes {
		return ev, &DecodeError{RejectOversize, fmt.Errorf("%d bytes, limit %d", len(data), maxBytes)}
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return ev, &DecodeError{RejectJSON, err}
	}
	if ev.V != messages.EventVersion {
		return ev, &DecodeError{RejectVersion, fmt.Errorf("envelope version %d, this build reads %d", ev.V, messages.EventVersion)}
	}
	if err := ev.Validate(); err != nil {
		return ev, &DecodeError{RejectInvalid, err}
	}
	if want := EventSubject(prefix, token(ev.Run), token(ev.Agent), ev.Type); subject != want {
		return ev, &DecodeError{RejectSubject, fmt.Errorf("published on %s, envelope says %s", subject, want)}
	}
	return ev, nil
}

// reason is the Reject* reason of an error from DecodeEvent.
func reason(err error) string {
	var de *DecodeError
	if errors.As(err, &de) {
		return de.Reason
	}
	return RejectInvalid
}
