package tools

import "errors"

// ErrSessionClosed is State's answer once the session was closed: the
// agent has ended and its tools start nothing new.
var ErrSessionClosed = errors.New("the tool session is closed")
