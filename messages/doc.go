// Package messages holds every type that crosses an actor or a process
// boundary in troupe: actor messages, NATS wire payloads, the event envelope
// and its types, and the provider-neutral shapes of tools and tool calls.
//
// The package is the foundation of the import graph: it depends on the
// standard library and uuid only, and holds plain structs with JSON tags,
// constructors and validation, never behaviour. Wire types carry an explicit
// version; adding a field is compatible, renaming or removing one is a
// version bump.
package messages
