package bus

import "errors"

// ErrStreamMismatch marks a stream that exists with other subjects than
// the configured prefix gives it.
var ErrStreamMismatch = errors.New("stream subjects disagree with nats.prefix")

// ErrUnknownRun marks a run ID (or prefix of one) that no run.started
// event in the events stream has.
var ErrUnknownRun = errors.New("no such run")

// ErrAmbiguousRun marks a prefix shared by the IDs of several runs.
var ErrAmbiguousRun = errors.New("run ID prefix matches several runs")
