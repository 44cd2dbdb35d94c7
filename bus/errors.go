package bus

import "errors"

// ErrStreamMismatch marks a stream that exists with other subjects than
// the configured prefix gives it.
var ErrStreamMismatch = errors.New("stream subjects disagree with nats.prefix")

// ErrUnknownRole is a role name that is not requester, node or watcher.
var ErrUnknownRole = errors.New("unknown role")

// ErrBadKeys is key material in an auth folder that cannot be read back.
var ErrBadKeys = errors.New("unreadable key material")

// ErrUnknownRun marks a run ID (or prefix of one) that no run.started
// event in the events stream has.
var ErrUnknownRun = errors.New("no such run")

// ErrAmbiguousRun marks a prefix shared by the IDs of several runs.
var ErrAmbiguousRun = errors.New("run ID prefix matches several runs")

// ErrNotResultSubject marks a subject that is not a result subject of
// the prefix (<prefix>.result.<run>.<agent>.<tag>).
var ErrNotResultSubject = errors.New("not a result subject")
