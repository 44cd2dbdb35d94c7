package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
)

// ProtocolVersion is the version of the task and result messages a node
// and an orchestrator exchange. A node refuses tasks of another version.
const ProtocolVersion = 1

// maxTaskBytes bounds a task or result message read from the wire.
const maxTaskBytes = 1 << 20

// TaskMessage is a child agent placed on the queue: everything a node
// needs to run it, and nothing else (a node keeps no other state).
type TaskMessage struct {
	V    int              `json:"v"`
	Task actors.ChildTask `json:"task"`
	// Origin names the orchestrator that sent it (host and process), for
	// logs.
	Origin string    `json:"origin,omitempty"`
	Sent   time.Time `json:"sent"`
}

// ResultMessage is a remote agent's end, published by the node that ran
// it before it acknowledges the task.
type ResultMessage struct {
	V       int                `json:"v"`
	Run     string             `json:"run"`
	Agent   string             `json:"agent"`
	Node    string             `json:"node"`
	Attempt int                `json:"attempt"`
	Result  actors.AgentResult `json:"result"`
}

// ErrBadMessage marks a task or result that cannot be used.
var ErrBadMessage = errors.New("bad message")

// DecodeTask reads a task message from the wire and checks it.
func DecodeTask(data []byte) (TaskMessage, error) {
	var m TaskMessage
	if len(data) > maxTaskBytes {
		return m, fmt.Errorf("%w: task of %d bytes is over the limit of %d", ErrBadMessage, len(data), maxTaskBytes)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("%w: task: %v", ErrBadMessage, err)
	}
	if m.V != ProtocolVersion {
		return m, fmt.Errorf("%w: task protocol version %d, this node speaks %d", ErrVersion, m.V, ProtocolVersion)
	}
	t := m.Task
	for _, f := range []struct{ name, v string }{{"run", t.Run}, {"agent", t.ID}, {"parent", t.Parent}, {"kind", t.Kind}} {
		if err := bus.CheckToken(f.name, f.v); err != nil {
			return m, fmt.Errorf("%w: task: %v", ErrBadMessage, err)
		}
	}
	if t.Task == "" {
		return m, fmt.Errorf("%w: task %s has no task text", ErrBadMessage, t.ID)
	}
	return m, nil
}

// ErrVersion marks a message of another protocol version.
var ErrVersion = errors.New("protocol version mismatch")

// DecodeResult reads a result message from the wire and checks it.
func DecodeResult(data []byte) (ResultMessage, error) {
	var m ResultMessage
	if len(data) > maxTaskBytes {
		return m, fmt.Errorf("%w: result of %d bytes is over the limit of %d", ErrBadMessage, len(data), maxTaskBytes)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("%w: result: %v", ErrBadMessage, err)
	}
	if m.V != ProtocolVersion {
		return m, fmt.Errorf("%w: result protocol version %d, want %d", ErrVersion, m.V, ProtocolVersion)
	}
	if m.Run == "" || m.Agent == "" || m.Result.Status == "" {
		return m, fmt.Errorf("%w: result lacks run, agent or status", ErrBadMessage)
	}
	return m, nil
}
