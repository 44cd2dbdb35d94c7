package cluster

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strconv"

	"github.com/nats-io/nats.go"
)

// A task's result is accepted only from the node that pulled the task:
// the run gives each task a random secret (messages.Task.Secret), which
// only the nodes that receive the task from the queue see, and the
// result carries an HMAC-SHA256 of its exact bytes under that secret.
// Anyone else who can publish results (any holder of node credentials)
// cannot make one the parent accepts.

// proofHeader carries a result's proof.
const proofHeader = "Troupe-Proof"

// newSecret is a fresh task secret (256 random bits, base64url).
func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// prove is the proof of data under secret.
func prove(secret string, data []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(data)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// proven says proof is data's proof under secret.
func proven(secret string, data []byte, proof string) bool {
	want := prove(secret, data)
	return hmac.Equal([]byte(want), []byte(proof))
}

// Each delivery of a task has a key of its own, derived from the task's
// secret, the delivery's attempt (the server's delivery count) and the
// node that holds it. A node's result, start notice and budget requests
// prove the key of its delivery, and name it in headers; the run accepts
// them only for the task's current delivery (the latest proven start), so
// after a redelivery the node of an earlier delivery can no longer speak
// for the task. The key is derived, not sent: a node that once held the
// task could derive another delivery's key, so this binds honest nodes to
// their delivery (a stale copy is refused) rather than defending against
// a node that held the task and turns hostile.
const (
	taskHeader    = "Troupe-Task"    // the task (its agent ID) a budget request speaks for
	attemptHeader = "Troupe-Attempt" // the delivery's attempt
	nodeHeader    = "Troupe-Node"    // the node that holds the delivery
)

// delivery is one delivery of a task, as the node that holds it proves it.
type delivery struct {
	task, node string
	attempt    int
	key        string
	tag        string // of its result's subject (result_subject.go)
}

// newDelivery is the delivery of the task whose secret is secret, on
// node, at attempt (nil when the task has no secret: nothing to prove).
func newDelivery(secret, task, node string, attempt int) *delivery {
	if secret == "" {
		return nil
	}
	return &delivery{task: task, node: node, attempt: attempt, key: deliveryKey(secret, attempt, node), tag: resultTag(secret, attempt)}
}

// deliveryKey is the key of one delivery of a task.
func deliveryKey(secret string, attempt int, node string) string {
	return prove(secret, []byte("delivery\x00"+strconv.Itoa(attempt)+"\x00"+node))
}

// sign adds data's proof and the delivery's names to h (a nil delivery
// signs nothing).
func (d *delivery) sign(h nats.Header, data []byte) nats.Header {
	if d == nil {
		return h
	}
	if h == nil {
		h = nats.Header{}
	}
	h.Set(proofHeader, prove(d.key, data))
	h.Set(taskHeader, d.task)
	h.Set(attemptHeader, strconv.Itoa(d.attempt))
	h.Set(nodeHeader, d.node)
	return h
}

// signedBy reads the delivery a message names in its headers.
func signedBy(h nats.Header) (attempt int, node string) {
	attempt, _ = strconv.Atoi(h.Get(attemptHeader))
	return attempt, h.Get(nodeHeader)
}
