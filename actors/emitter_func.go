package actors

import "github.com/troupe-ai/troupe/messages"

// EmitterFunc adapts a function to an Emitter. It is called from the
// agents' goroutines, concurrently: it must be safe for that and quick.
type EmitterFunc func(messages.Event)

// Emit calls f(ev).
func (f EmitterFunc) Emit(ev messages.Event) { f(ev) }
