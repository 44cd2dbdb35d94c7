package cluster

import (
	"github.com/troupe-ai/troupe/bus"
)

// DefaultPrefix is the first token of every troupe subject.
const DefaultPrefix = "troupe"

// TaskSubject is bus.TaskSubject: <prefix>.task.<kind>.v<protocol>.
func TaskSubject(prefix, kind string, protocol int) string {
	return bus.TaskSubject(prefix, kind, protocol)
}

// consumerName is the durable consumer of kind's tasks in one protocol
// version, shared by every node of that version that runs the kind:
// <prefix>_<kind>_v<protocol>.
func consumerName(prefix, kind string, protocol int) string {
	return bus.ConsumerName(prefix, kind, protocol)
}
