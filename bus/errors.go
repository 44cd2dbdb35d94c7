package bus

import "errors"

// ErrStreamMismatch marks a stream that exists with other subjects than
// the configured prefix gives it.
var ErrStreamMismatch = errors.New("stream subjects disagree with nats.prefix")

// ErrUnknownRole is a role name that is not requester, node or watcher.
var ErrUnknownRole = errors.New("unknown role")

// ErrBadKeys is key material in an auth folder that cannot be read back.
var ErrBadKeys = errors.New("unreadable key material")
