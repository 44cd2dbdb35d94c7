package actors

import (
	"github.com/troupe-ai/troupe/internal/redact"
	"github.com/troupe-ai/troupe/messages"
)

// redactingEmitter masks the run's secrets in every event's payload before
// any sink (NATS, logs, the live view) gets it.
type redactingEmitter struct {
	out Emitter
	r   *redact.Redactor
}

// Emit passes ev on with its data redacted.
func (e redactingEmitter) Emit(ev messages.Event) {
	ev.Data = e.r.JSON(ev.Data)
	e.out.Emit(ev)
}
