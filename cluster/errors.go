package cluster

import "errors"

// ErrUnproven marks a node's message (a result, start notice or budget
// request) that does not prove its task's delivery key: not from a node
// that pulled the task, or for no task this run is waiting for.
var ErrUnproven = errors.New("not proven by the task's delivery")

// ErrStaleDelivery marks a proven message of a task's earlier delivery,
// after a later delivery to another node (or a later attempt) started.
var ErrStaleDelivery = errors.New("from an earlier delivery of the task")

// ErrUntaggedResult marks a result published on the untagged subject of
// an older troupe (<prefix>.result.<run>.<agent>), by a node that proves
// the task's delivery: the node must be upgraded.
var ErrUntaggedResult = errors.New("result from a node of an older troupe")

// ErrKindNotGranted marks a kind a node was asked to run that its
// credentials (a node's own, issued for some kinds) do not let it pull.
var ErrKindNotGranted = errors.New("kind not granted to this node")
