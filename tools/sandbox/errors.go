package sandbox

import "errors"

// ErrUnsupported: the kernel cannot enforce a part of the policy and the
// policy requires it.
var ErrUnsupported = errors.New("sandbox: not enforceable on this kernel")

// ErrBadPolicy: a policy is malformed (a relative path, an unknown network
// mode).
var ErrBadPolicy = errors.New("sandbox: invalid policy")

// ErrWiden: a policy asked for more than the one it must stay within.
var ErrWiden = errors.New("sandbox: a policy may tighten but never widen")

// ErrClosed: the box was closed (its agent has ended).
var ErrClosed = errors.New("sandbox: the agent's sandbox is closed")
