package bus

import "errors"

// ErrStreamMismatch marks a stream that exists with other subjects than
// the configured prefix gives it.
var ErrStreamMismatch = errors.New("stream subjects disagree with nats.prefix")
