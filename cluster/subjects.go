package cluster

import "strconv"

// DefaultPrefix is the first token of every troupe subject.
const DefaultPrefix = "troupe"

// TaskSubject is <prefix>.task.<kind>.v<protocol>: the subject of kind's
// tasks in one protocol version. Each version has its own subject and its
// own durable consumer, so a node only ever receives tasks it can read: a
// node of another version never takes (and never spends the delivery
// attempts of) a task it would have to refuse.
func TaskSubject(prefix, kind string, protocol int) string {
	return prefix + ".task." + kind + ".v" + strconv.Itoa(protocol)
}

// consumerName is the durable consumer of kind's tasks in one protocol
// version, shared by every node of that version that runs the kind.
func consumerName(kind string, protocol int) string {
	return "troupe_" + kind + "_v" + strconv.Itoa(protocol)
}
