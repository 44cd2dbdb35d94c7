// Package bus is troupe's NATS plumbing: an embedded nats-server with
// JetStream on loopback (the default), or a connection to an external
// server or cluster (URLs, token, user and password, a .creds file, TLS);
// the subjects, streams and buckets of a deployment, created idempotently
// (an existing stream keeps its data, and its limits unless they are
// applied explicitly);
// the event publisher that puts every lifecycle event of a run on
// <prefix>.evt.<run>.<agent>.<type> (a requester's: nodes send theirs to
// the run's requester, which publishes what it checked, EmitEncoded); and
// the subscriber that reads them back, live or replayed from the
// TROUPE_EVENTS stream.
//
// Delivery: the Publisher never blocks an agent. Emit only enqueues into a
// bounded queue; a background goroutine publishes with a bounded window of
// unacknowledged messages. While the server is away the connection
// reconnects and buffers (bounded); an event that finds the queue full is
// dropped and counted (Dropped), never waited for. Published + Dropped
// equals the events emitted once Close returns. Subscribers can tell they
// missed nothing: every agent's events carry seq from 1 without gaps (per
// attempt for remote agents), and each delivery carries the stream's own
// sequence.
//
// Anything read from the wire is hostile until checked: Events decodes and
// validates every message (size, JSON, envelope version and fields, the
// subject matching the envelope); a bad one is counted by reason, logged at
// warn with its subject, and never delivered.
package bus
