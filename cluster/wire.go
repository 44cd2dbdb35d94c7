package cluster

import (
	"github.com/troupe-ai/troupe/messages"
)

// maxTaskBytes bounds a task or result message read from the wire.
const maxTaskBytes = 1 << 20

// DecodeTask reads a task from the wire and checks it.
func DecodeTask(data []byte) (messages.Task, error) {
	return messages.Decode[messages.Task](data, maxTaskBytes)
}

// DecodeResult reads a result from the wire and checks it.
func DecodeResult(data []byte) (messages.Result, error) {
	return messages.Decode[messages.Result](data, maxTaskBytes)
}

// startNotice is what a node publishes on <prefix>.ctl.<run>.<agent>.started
// when it takes a task (Refused empty) or refuses it (Refused says why),
// so the orchestrator knows where the task ran and, should it fail for
// good, can say what became of each attempt.
type startNotice struct {
	Node    string `json:"node"`
	Name    string `json:"name,omitempty"`
	Attempt int    `json:"attempt"`
	Refused string `json:"refused,omitempty"`
}
