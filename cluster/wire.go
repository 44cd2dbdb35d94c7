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
