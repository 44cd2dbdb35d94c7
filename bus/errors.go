package bus

import "errors"

// ErrUnknownRole is a role name that is not requester, node or watcher.
var ErrUnknownRole = errors.New("unknown role")

// ErrBadKeys is key material in an auth folder that cannot be read back.
var ErrBadKeys = errors.New("unreadable key material")
