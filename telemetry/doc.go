// Package telemetry exports OpenTelemetry traces of a run following the
// GenAI semantic conventions: one span per agent (invoke_agent), per model
// call (chat) and per tool call (execute_tool), parented along the
// delegation tree, across processes too: Inject and Extract carry the W3C
// trace context in a message's headers (a NATS task's, in cluster).
//
// Tracing is off unless an OTLP endpoint is configured (Config, Start):
// then spans go over OTLP/HTTP (protobuf) through the official Go SDK,
// batched, and Provider.Shutdown flushes them. Off, a Tracer is its zero
// value and every Start function returns at once after one bool or one
// context lookup: nothing is allocated on the agents' hot paths.
//
// Spans carry names, IDs, models, token counts, finish reasons and
// outcomes, never prompt, response or tool text, nor arguments: what the
// model read and wrote stays out of traces.
//
// The package imports no package of ours and knows nothing of NATS: a
// header set is a plain map[string][]string (nats.Header is one).
package telemetry
